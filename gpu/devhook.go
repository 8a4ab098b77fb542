package gpu

import (
	"sync"

	"github.com/vkjobs/vkjobs/gpu/internal/devhook"
	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

// The graphics backend (package gpu/gfx) reaches a Device's Vulkan handles
// and internals through package gpu/internal/devhook, which this init
// fills; see that package for why.
func init() {
	devhook.DeviceOf = func(d any) devhook.Device { return (*hookDevice)(d.(*Device)) }
	devhook.BufferOf = func(b any) devhook.Buffer { return (*hookBuffer)(b.(*Buffer)) }
}

type hookDevice Device

func (h *hookDevice) Handles() devhook.Handles {
	return devhook.Handles{
		Instance:      h.inst,
		Physical:      h.phys,
		Device:        h.dev,
		Queue:         h.queue,
		QueueFamily:   h.qfam,
		PipelineCache: h.pcache,
	}
}

func (h *hookDevice) QueueLock() *sync.Mutex     { return &h.qmu }
func (h *hookDevice) Usable() error              { return (*Device)(h).usable() }
func (h *hookDevice) Closed() bool               { return h.dev == 0 || h.closing.Load() }
func (h *hookDevice) MarkLost(err error)         { (*Device)(h).markLost(err) }
func (h *hookDevice) DeviceExtensions() []string { return h.opts.DeviceExtensions }
func (h *hookDevice) MaxPushConstants() uint32   { return h.lim.maxPushConstants }
func (h *hookDevice) TakeSubmitFault() bool      { return takeFault(&h.faultSubmit) }

func (h *hookDevice) MaxViewport() [2]uint32 { return h.lim.maxViewport }

func (h *hookDevice) OnClose(key any, f func() error) error {
	d := (*Device)(h)
	d.emu.Lock()
	defer d.emu.Unlock()
	if f == nil {
		delete(d.closers, key)
		return nil
	}
	if d.closed {
		return d.usable()
	}
	if d.closers == nil {
		d.closers = map[any]func() error{}
	}
	d.closers[key] = f
	return nil
}

func (h *hookDevice) FindMemType(bits uint32, want, prefer vk.MemoryPropertyFlags) (int, bool) {
	return (*Device)(h).findMemType(bits, want, prefer)
}

func (h *hookDevice) NewStagingBlock(size uint64) (devhook.Block, error) {
	b, err := (*Device)(h).newBlock(size, memStaging)
	if err != nil {
		return devhook.Block{}, err
	}
	return devhook.Block{Buf: b.buf, Mapped: b.mapped, Impl: &b}, nil
}

func (h *hookDevice) FreeBlock(b *devhook.Block) {
	if m, ok := b.Impl.(*memBlock); ok {
		(*Device)(h).freeBlock(m)
	}
	*b = devhook.Block{}
}

type hookBuffer Buffer

func (h *hookBuffer) Handle() vk.Buffer { return h.blk.buf }
func (h *hookBuffer) Acquire() bool     { return (*Buffer)(h).acquire() }
func (h *hookBuffer) Release()          { (*Buffer)(h).release() }
func (h *hookBuffer) Closed() bool      { return h.closed.Load() || h.gone.Load() }
