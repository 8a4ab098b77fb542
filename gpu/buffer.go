package gpu

import (
	"fmt"
	"sync/atomic"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/sched"
)

// memKind says where a block lives.
type memKind int

const (
	memDevice  memKind = iota // device-local; mapped when the device is direct
	memStaging                // host-visible, coherent, preferably cached
)

// bufferUsage is every buffer's usage: storage and uniform for kernels,
// transfer for copies, vertex and index so that graphics binds buffers
// written by kernels (the skinning kernel's output) with no copy.
const bufferUsage = vk.BufferUsageStorageBufferBit | vk.BufferUsageUniformBufferBit |
	vk.BufferUsageTransferSrcBit | vk.BufferUsageTransferDstBit |
	vk.BufferUsageVertexBufferBit | vk.BufferUsageIndexBufferBit

// memBlock is one VkBuffer with its own memory.
type memBlock struct {
	buf  vk.Buffer
	mem  vk.DeviceMemory
	size uint64
	// vkSize is the VkBuffer's size: size, or for a Buffer its size
	// rounded up to whole 16-byte elements (newBuffer), which a binding's
	// range may reach (bindStream).
	vkSize uint64
	mapped []byte // nil unless host-visible
	heap   int    // memory heap of mem
	alloc  uint64 // bytes of mem, counted in Device.heapUsed
}

// findMemType returns a memory type allowed by bits with all of want,
// chosen by chooseMemType.
func (d *Device) findMemType(bits uint32, want, prefer vk.MemoryPropertyFlags) (int, bool) {
	i := chooseMemType(d.memTypes, d.heaps, bits, want, prefer)
	return i, i >= 0
}

// chooseMemType returns the index of the memory type allowed by bits that
// has all of want, or -1. For device-local memory it takes the type on the
// largest heap, and among the types of that heap one that also has prefer:
// a discrete GPU lists device-local, host-visible types on both its VRAM
// heap and its 256 MiB BAR window (in either order), and directMemory
// measures the largest such heap, so the allocation must come from that
// heap too, not from whichever type the driver lists first. (Preferring
// prefer first would let a host-cached type on a small heap win over the
// heap directMemory measured.) For other memory (staging) the heap size
// says nothing useful: the first type with prefer, else the first type.
func chooseMemType(types []memType, heaps []uint64, bits uint32, want, prefer vk.MemoryPropertyFlags) int {
	bySize := want&vk.MemoryPropertyDeviceLocalBit != 0
	found, foundHeap, foundPref := -1, uint64(0), false
	for i, t := range types {
		if i >= 32 || bits&(1<<uint(i)) == 0 || t.flags&want != want || int(t.heap) >= len(heaps) {
			continue
		}
		heap, pref := heaps[t.heap], t.flags&prefer == prefer
		switch {
		case found < 0:
		case bySize && heap != foundHeap:
			if heap < foundHeap {
				continue
			}
		case !pref || foundPref:
			continue
		}
		found, foundHeap, foundPref = i, heap, pref
	}
	return found
}

// newBlock creates a buffer of size bytes with memory of the given kind.
func (d *Device) newBlock(size uint64, kind memKind) (memBlock, error) {
	if size == 0 {
		size = 4
	}
	buf, reqSize, typeBits, r := d.shim.CreateBuffer(size, bufferUsage)
	if err := check("vkCreateBuffer", Result(r)); err != nil {
		return memBlock{}, err
	}
	b := memBlock{buf: buf, size: size, vkSize: size}

	hostFlags := vk.MemoryPropertyHostVisibleBit | vk.MemoryPropertyHostCoherentBit
	var want, prefer vk.MemoryPropertyFlags
	switch {
	case kind == memStaging:
		want, prefer = hostFlags, vk.MemoryPropertyHostCachedBit
	case d.direct:
		want, prefer = directMemFlags()
	default:
		want, prefer = vk.MemoryPropertyDeviceLocalBit, 0
	}
	ti, ok := d.findMemType(typeBits, want, prefer)
	if !ok {
		d.freeBlock(&b)
		return memBlock{}, fmt.Errorf("gpu: no memory type for a %d-byte buffer (flags %#x of types %#x)", size, want, typeBits)
	}
	if heap := d.heaps[d.memTypes[ti].heap]; reqSize > heap {
		d.freeBlock(&b)
		return memBlock{}, fmt.Errorf("%w: a %d-byte buffer exceeds its memory heap of %d bytes", ErrOutOfMemory, reqSize, heap)
	}
	// The heap's budget: what this device already allocated there and this
	// block must fit the heap, so that a run that cannot fit is refused at
	// its setup with the figures, not later by the driver (or the kernel's
	// OOM killer, on a CPU device whose heap is host memory).
	if err := d.reserve(int(d.memTypes[ti].heap), reqSize); err != nil {
		d.freeBlock(&b)
		return memBlock{}, err
	}
	b.heap, b.alloc = int(d.memTypes[ti].heap), reqSize
	if takeFault(&d.faultAlloc) {
		d.freeBlock(&b)
		return memBlock{}, fmt.Errorf("%w (injected fault, %d bytes)", check("vkAllocateMemory", ErrorOutOfDeviceMemory), reqSize)
	}
	mem, r := d.shim.AllocateMemory(reqSize, uint32(ti))
	if err := check("vkAllocateMemory", Result(r)); err != nil {
		d.freeBlock(&b)
		return memBlock{}, fmt.Errorf("%w (%d bytes)", err, reqSize)
	}
	b.mem = mem
	if err := check("vkBindBufferMemory", Result(d.shim.BindBufferMemory(buf, mem, 0))); err != nil {
		d.freeBlock(&b)
		return memBlock{}, err
	}
	// Device blocks are mapped only on direct devices, so that
	// ForceStaging exercises exactly the path of a discrete GPU.
	if (kind == memStaging || d.direct) && d.memTypes[ti].flags&vk.MemoryPropertyHostVisibleBit != 0 {
		mapped, r := d.shim.MapMemory(mem, 0, size)
		if err := check("vkMapMemory", Result(r)); err != nil {
			d.freeBlock(&b)
			return memBlock{}, err
		}
		b.mapped = mapped
	}
	return b, nil
}

func (d *Device) freeBlock(b *memBlock) {
	if b.mapped != nil {
		d.shim.UnmapMemory(b.mem)
		b.mapped = nil
	}
	if b.buf != 0 {
		d.shim.DestroyBuffer(b.buf)
		b.buf = 0
	}
	if b.mem != 0 {
		d.shim.FreeMemory(b.mem)
		b.mem = 0
	}
	if b.alloc != 0 {
		d.hmu.Lock()
		d.heapUsed[b.heap] -= b.alloc
		d.hmu.Unlock()
		b.alloc = 0
	}
}

// reserve counts n more bytes on heap h, or fails with ErrOutOfMemory when
// they would take the heap's use past its size.
func (d *Device) reserve(h int, n uint64) error {
	d.hmu.Lock()
	defer d.hmu.Unlock()
	if d.heapUsed == nil {
		d.heapUsed = make([]uint64, len(d.heaps))
	}
	if used := d.heapUsed[h]; used+n > d.heaps[h] {
		return fmt.Errorf("%w: %d more bytes would take memory heap %d past its %d bytes (%d already allocated by this device)",
			ErrOutOfMemory, n, h, d.heaps[h], used)
	}
	d.heapUsed[h] += n
	return nil
}

// Buffer is a persistent GPU-resident buffer. Name it in a task's stream
// (Stream.Buffer = b.ID(), or b.Stream(...)) so that chained GPU kernels
// keep their data on the device: a GPU task binds it directly, with no
// copy through Go memory. Create with Device.NewBuffer; safe for concurrent
// use. The contents are undefined until written by Write or a GPU task.
//
// Write and Read must not overlap GPU tasks that name the buffer: call them
// before adding such tasks or after waiting for them (the buffer has no
// lock against the GPU; that would be a data race, as with any memory that
// tasks share).
type Buffer struct {
	d      *Device
	id     sched.BufferID
	blk    memBlock
	refs   atomic.Int32 // 1 for the owner + 1 per batch using it
	closed atomic.Bool
	gone   atomic.Bool // destroyed
}

// NewBuffer creates a GPU-resident buffer of size bytes in device-local
// memory (host-mapped when the device allows it). A size beyond the memory
// heap, or a failed allocation, returns an error wrapping ErrOutOfMemory.
func (d *Device) NewBuffer(size uint64) (*Buffer, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	return d.newBuffer(size, true)
}

func (d *Device) newBuffer(size uint64, register bool) (*Buffer, error) {
	if size == 0 {
		return nil, fmt.Errorf("%w: a buffer of 0 bytes", ErrBadStream)
	}
	// The VkBuffer spans whole 16-byte elements (a uint or vec4 array
	// over a stream of smaller items), so that a binding of the stream's
	// last bytes can reach the shader's last element; Size, Write, Read
	// and Mapped keep to the size asked for.
	blk, err := d.newBlock(alignUp(size, 16), memDevice)
	if err != nil {
		return nil, err
	}
	b := &Buffer{d: d, blk: blk}
	b.blk.size = size
	if b.blk.mapped != nil {
		b.blk.mapped = b.blk.mapped[:size:size]
	}
	b.refs.Store(1)
	if register {
		d.bmu.Lock()
		d.nextBuf++
		b.id = sched.BufferID(d.nextBuf)
		d.bufs[b.id] = b
		d.bmu.Unlock()
	}
	return b, nil
}

// ID returns the buffer's ID, for sched.Stream.Buffer.
func (b *Buffer) ID() sched.BufferID { return b.id }

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() uint64 { return b.blk.size }

// Mapped returns the buffer's memory mapped into the host when the device
// memory is host-visible (see Device.HostVisible), else nil. The same rule
// as for Write applies: no access while GPU tasks use the buffer. A stream
// whose Bytes are exactly Mapped()[Offset:...] is used in place, with no
// copy.
func (b *Buffer) Mapped() []byte { return b.blk.mapped }

// Stream returns a stream of count elements of stride bytes that names the
// buffer from byte offset off (which must be a multiple of the device's
// storage-buffer offset alignment, at most 256).
func (b *Buffer) Stream(stride, count uint32, off uint64) sched.Stream {
	return sched.Stream{Stride: stride, Count: count, Buffer: b.id, Offset: off}
}

// Write copies p into the buffer at byte offset off.
func (b *Buffer) Write(off uint64, p []byte) error {
	if err := b.usable(off, uint64(len(p))); err != nil || len(p) == 0 {
		return err
	}
	if b.blk.mapped != nil {
		copy(b.blk.mapped[off:], p)
		return nil
	}
	return b.d.transferBuffer(b, off, p, true)
}

// Read copies the buffer's bytes at offset off into p.
func (b *Buffer) Read(off uint64, p []byte) error {
	if err := b.usable(off, uint64(len(p))); err != nil || len(p) == 0 {
		return err
	}
	if b.blk.mapped != nil {
		copy(p, b.blk.mapped[off:])
		return nil
	}
	return b.d.transferBuffer(b, off, p, false)
}

func (b *Buffer) usable(off, n uint64) error {
	if b.closed.Load() || b.gone.Load() {
		return fmt.Errorf("%w: buffer %d was closed (Buffer.Close or Device.Close)", ErrClosed, b.id)
	}
	if err := b.d.usable(); err != nil {
		return err
	}
	if off > b.blk.size || n > b.blk.size-off {
		return fmt.Errorf("%w: buffer %d: bytes [%d, %d) outside its %d bytes", ErrBadStream, b.id, off, off+n, b.blk.size)
	}
	return nil
}

// Close releases the buffer. Tasks already holding it keep it alive until
// their command buffer completes; tasks that name it later fail with
// ErrBadStream. Close is idempotent. Device.Close frees buffers left open.
func (b *Buffer) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.release()
	return nil
}

// acquire takes a reference for a batch; false if the buffer is closing.
func (b *Buffer) acquire() bool {
	for {
		n := b.refs.Load()
		if n <= 0 || b.closed.Load() {
			return false
		}
		if b.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (b *Buffer) release() {
	if b.refs.Add(-1) == 0 {
		b.destroy()
	}
}

// destroy frees the buffer's memory once (the last reference, or
// Device.Close, which frees buffers still referenced by a lost device).
func (b *Buffer) destroy() {
	if !b.gone.CompareAndSwap(false, true) {
		return
	}
	if b.id != 0 {
		b.d.bmu.Lock()
		delete(b.d.bufs, b.id)
		b.d.bmu.Unlock()
	}
	b.d.freeBlock(&b.blk)
}

// lookupBuffer finds a live buffer by ID and takes a reference.
func (d *Device) lookupBuffer(id sched.BufferID) (*Buffer, error) {
	d.bmu.RLock()
	b := d.bufs[id]
	d.bmu.RUnlock()
	if b == nil || !b.acquire() {
		return nil, fmt.Errorf("%w: buffer %d is unknown or closed", ErrBadStream, id)
	}
	return b, nil
}

// oneShot is the device's transfer context for Buffer.Write/Read on memory
// that the host cannot map.
type oneShot struct {
	pool  vk.CommandPool
	cb    vk.CommandBuffer
	fence vk.Fence
	stage memBlock
}

func (o *oneShot) destroy(d *Device) {
	d.freeBlock(&o.stage)
	d.shim.DestroyFence(o.fence)
	d.shim.DestroyCommandPool(o.pool)
}

// transferBuffer copies p to (write) or from the buffer through a staging
// buffer, one command buffer and a fence, waiting for completion.
func (d *Device) transferBuffer(b *Buffer, off uint64, p []byte, write bool) error {
	d.tmu.Lock()
	defer d.tmu.Unlock()
	if d.transfer == nil {
		o := &oneShot{}
		var err error
		if o.pool, o.cb, err = d.newCommandPool(); err == nil {
			o.fence, err = d.newFence()
		}
		if err != nil {
			o.destroy(d)
			return err
		}
		d.transfer = o
	}
	o := d.transfer
	n := uint64(len(p))
	if o.stage.size < n {
		d.freeBlock(&o.stage)
		blk, err := d.newBlock(max(n, 1<<16), memStaging)
		if err != nil {
			return err
		}
		o.stage = blk
	}
	if write {
		copy(o.stage.mapped, p)
	}
	if err := check("vkResetFences/vkResetCommandPool", Result(d.shim.SlotReset(o.fence, o.pool, 0))); err != nil {
		return err
	}
	if err := check("vkBeginCommandBuffer", Result(d.shim.Begin(o.cb))); err != nil {
		return err
	}
	region := []vk.BufferCopy{{Src: 0, Dst: off, Size: n}}
	all := vk.AccessShaderWriteBit | vk.AccessTransferWriteBit | vk.AccessHostWriteBit
	if write {
		d.shim.Barrier(o.cb, vk.PipelineStageAllCommandsBit, vk.PipelineStageTransferBit, all, vk.AccessTransferWriteBit|vk.AccessTransferReadBit)
		d.shim.Copy(o.cb, o.stage.buf, b.blk.buf, region)
	} else {
		region[0] = vk.BufferCopy{Src: off, Dst: 0, Size: n}
		d.shim.Barrier(o.cb, vk.PipelineStageAllCommandsBit, vk.PipelineStageTransferBit, all, vk.AccessTransferReadBit)
		d.shim.Copy(o.cb, b.blk.buf, o.stage.buf, region)
	}
	d.shim.Barrier(o.cb, vk.PipelineStageTransferBit, vk.PipelineStageHostBit|vk.PipelineStageAllCommandsBit,
		vk.AccessTransferWriteBit, vk.AccessHostReadBit|vk.AccessShaderReadBit|vk.AccessShaderWriteBit|vk.AccessTransferReadBit)
	if err := check("vkEndCommandBuffer", Result(d.shim.End(o.cb))); err != nil {
		return err
	}
	if err := d.submit(o.cb, o.fence); err != nil {
		return err
	}
	r := Result(d.shim.Wait(o.fence, ^uint64(0)))
	if err := check("vkWaitForFences", r); err != nil {
		if r == ErrorDeviceLost {
			d.markLost(err)
		}
		return err
	}
	if !write {
		copy(p, o.stage.mapped[:n])
	}
	return nil
}

// newCommandPool creates a command pool on the device's queue family with
// one primary command buffer.
func (d *Device) newCommandPool() (vk.CommandPool, vk.CommandBuffer, error) {
	pool, r := d.shim.CreateCommandPool(d.qfam, vk.CommandPoolCreateTransientBit)
	if err := check("vkCreateCommandPool", Result(r)); err != nil {
		return 0, 0, err
	}
	cb, r := d.shim.PrimaryCommandBuffer(pool)
	if err := check("vkAllocateCommandBuffers", Result(r)); err != nil {
		d.shim.DestroyCommandPool(pool)
		return 0, 0, err
	}
	return pool, cb, nil
}

func (d *Device) newFence() (vk.Fence, error) {
	f, r := d.shim.CreateFence(false)
	return f, check("vkCreateFence", Result(r))
}

// Arena is a transient (per-frame) linear allocator over one device buffer
// and, when device memory is not host-visible, a host staging twin with the
// same offsets. Allocation is a bump of an offset; Reset frees everything
// at once, after the GPU work that used the frame's spans has completed
// (its fence). The executor keeps one per command buffer in flight for the
// host streams of its tasks; graphics code keeps one per frame. An Arena is
// not safe for concurrent use.
type Arena struct {
	d     *Device
	dev   memBlock // bound in descriptors
	host  memBlock // == dev when direct
	align uint64
	used  uint64
}

// Span is an allocation in an Arena: Offset into the arena's buffers, and
// the host-visible bytes (the device buffer itself when the device is
// host-visible, else the staging twin, which must be copied with a
// recorded copy command: see Arena.Staged).
type Span struct {
	Offset uint64
	Size   uint64
	Host   []byte
}

// NewArena creates an arena of size bytes. Its alignment suits storage and
// uniform buffer bindings.
func (d *Device) NewArena(size uint64) (*Arena, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	a := &Arena{d: d, align: max(d.lim.storageAlign, d.lim.uniformAlign, 16)}
	var err error
	if a.dev, err = d.newBlock(size, memDevice); err != nil {
		return nil, err
	}
	if a.dev.mapped != nil {
		a.host = a.dev
	} else if a.host, err = d.newBlock(size, memStaging); err != nil {
		d.freeBlock(&a.dev)
		return nil, err
	}
	d.bmu.Lock()
	d.arenas[a] = struct{}{}
	d.bmu.Unlock()
	return a, nil
}

// Cap returns the arena's size in bytes; Used how many are allocated.
func (a *Arena) Cap() uint64  { return a.dev.size }
func (a *Arena) Used() uint64 { return a.used }

// Staged reports whether Span.Host is a staging twin (copies needed)
// rather than the device buffer itself.
func (a *Arena) Staged() bool { return a.host.buf != a.dev.buf }

// Alloc allocates n bytes aligned for buffer bindings. It fails with
// ErrArenaFull when the arena has no room left (it never grows), and with
// ErrClosed after Close (or the device's Close).
func (a *Arena) Alloc(n uint64) (Span, error) {
	if a.host.mapped == nil {
		return Span{}, fmt.Errorf("%w: Alloc on an arena that was closed (Arena.Close or Device.Close)", ErrClosed)
	}
	off := alignUp(a.used, a.align)
	if off > a.dev.size || n > a.dev.size-off {
		return Span{}, fmt.Errorf("%w: %d bytes requested, %d of %d used", ErrArenaFull, n, a.used, a.dev.size)
	}
	a.used = off + n
	return Span{Offset: off, Size: n, Host: a.host.mapped[off : off+n : off+n]}, nil
}

// window reserves room for bytes [lo, hi) of a stream that shaders index
// from the stream's start: it returns base such that the stream binds at
// base and its used bytes sit at [base+lo, base+hi), never below the bytes
// already allocated. Only hi-lo bytes (plus alignment) are consumed when
// the arena already holds lo bytes; the descriptor window below base+lo
// overlaps earlier data that the shader never touches.
func (a *Arena) window(lo, hi uint64) (base uint64, ok bool) {
	start := a.used
	if start < lo {
		start = lo
	}
	base = alignUp(start-lo, a.align)
	if base+hi > a.dev.size {
		return 0, false
	}
	a.used = base + hi
	return base, true
}

// Reset frees every span.
func (a *Arena) Reset() { a.used = 0 }

// Close frees the arena's memory. It is idempotent, and Device.Close
// frees the arenas left open (Close after it does nothing).
func (a *Arena) Close() {
	d := a.d
	d.bmu.Lock()
	_, open := d.arenas[a]
	delete(d.arenas, a)
	d.bmu.Unlock()
	if !open {
		return
	}
	if a.host.buf != a.dev.buf {
		d.freeBlock(&a.host)
	}
	d.freeBlock(&a.dev)
	a.host, a.dev = memBlock{}, memBlock{}
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }
