// Package gputest is what the GPU tests of every package share: opening a
// real Vulkan device with the validation layer on, collecting its messages
// so a test can fail on any of them, the CI rule (no device is a skip on a
// developer's machine and a failure when CI=true), and one device per test
// binary (opening one and compiling shaders is paid once).
//
// It is a test helper: import it only from _test.go files.
package gputest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/sched"
)

// Log collects a device's debug-report messages. Safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	msgs []string
}

// Add records a message (pass it as gpu.Options.OnMessage).
func (l *Log) Add(m gpu.Message) {
	l.mu.Lock()
	l.msgs = append(l.msgs, m.String())
	l.mu.Unlock()
}

// Since returns the messages after the first n.
func (l *Log) Since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs[n:]...)
}

// Len returns how many messages were recorded.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.msgs)
}

// Check fails tb if messages arrived after the first n.
func (l *Log) Check(tb testing.TB, n int) {
	tb.Helper()
	if msgs := l.Since(n); len(msgs) > 0 {
		tb.Errorf("%d validation message(s):\n\t%s", len(msgs), strings.Join(msgs, "\n\t"))
	}
}

// Open opens a device with the validation layer on and its messages going
// to a new Log. Without a Vulkan device it skips tb, or fails it when
// CI=true (CI must exercise the GPU path).
func Open(tb testing.TB, opts gpu.Options) (*gpu.Device, *Log) {
	tb.Helper()
	return open(tb, opts, true)
}

// OpenUnvalidated is Open without the validation layer, for benchmarks
// that must time the driver rather than the layer.
func OpenUnvalidated(tb testing.TB, opts gpu.Options) (*gpu.Device, *Log) {
	tb.Helper()
	return open(tb, opts, false)
}

func open(tb testing.TB, opts gpu.Options, validate bool) (*gpu.Device, *Log) {
	tb.Helper()
	log := &Log{}
	opts.Validation = validate
	opts.OnMessage = log.Add
	d, err := gpu.Open(opts)
	if errors.Is(err, gpu.ErrNoDevice) {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("no Vulkan device, and CI=true requires one (install mesa-vulkan-drivers): %v", err)
		}
		tb.Skipf("skipping GPU test: no Vulkan device (with CI=true this fails): %v", err)
	}
	if err != nil {
		tb.Fatalf("opening a validated Vulkan device: %v", err)
	}
	return d, log
}

// Shared keeps one device per key for a whole test binary. The zero value
// is ready to use; call Close from TestMain.
type Shared struct {
	mu   sync.Mutex
	devs map[string]*gpu.Device
	logs map[string]*Log
	keys []string
}

// Get returns the device for key, opening it with opts and running prepare
// (e.g. Device.PreparePipelines) the first time.
func (s *Shared) Get(tb testing.TB, key string, opts gpu.Options, prepare func(*gpu.Device) error) (*gpu.Device, *Log) {
	tb.Helper()
	return s.get(tb, key, opts, prepare, true)
}

// GetUnvalidated is Get for a device without the validation layer (for
// benchmarks); use a key of its own.
func (s *Shared) GetUnvalidated(tb testing.TB, key string, opts gpu.Options, prepare func(*gpu.Device) error) (*gpu.Device, *Log) {
	tb.Helper()
	return s.get(tb, key, opts, prepare, false)
}

func (s *Shared) get(tb testing.TB, key string, opts gpu.Options, prepare func(*gpu.Device) error, validate bool) (*gpu.Device, *Log) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.devs[key]; d != nil {
		return d, s.logs[key]
	}
	d, log := open(tb, opts, validate)
	if prepare != nil {
		if err := prepare(d); err != nil {
			d.Close()
			tb.Fatalf("preparing the shared device %q: %v", key, err)
		}
	}
	if s.devs == nil {
		s.devs, s.logs = map[string]*gpu.Device{}, map[string]*Log{}
	}
	s.devs[key], s.logs[key] = d, log
	s.keys = append(s.keys, key)
	return d, log
}

// Close closes every shared device and reports close errors and every
// validation message the devices emitted, during the tests or while closing
// (leaked objects, for instance).
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, k := range s.keys {
		if err := s.devs[k].Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the shared device %q: %w", k, err))
		}
		if msgs := s.logs[k].Since(0); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%d validation message(s) from the shared device %q:\n\t%s", len(msgs), k, strings.Join(msgs, "\n\t")))
		}
	}
	s.devs, s.logs, s.keys = nil, nil, nil
	return errors.Join(errs...)
}

// Main runs the tests and closes s afterwards; use it as
// func TestMain(m *testing.M) { os.Exit(gputest.Main(m, &shared)) }.
func Main(m *testing.M, s *Shared) int {
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// Sched makes a scheduler over cfg (cfg.Kernels must be set) with a GPU
// executor on dev attached and a registered "test" thread. At cleanup it
// closes the scheduler (which closes the executor) and fails tb on any
// validation message logged meanwhile.
func Sched(tb testing.TB, dev *gpu.Device, log *Log, cfg sched.Config, eo gpu.ExecutorOptions) (*sched.Scheduler, *gpu.Executor, *sched.Ctx) {
	tb.Helper()
	n0 := log.Len()
	exec, err := gpu.NewExecutor(dev, eo)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := sched.New(cfg)
	if err != nil {
		exec.Close()
		tb.Fatal(err)
	}
	if err := s.AttachExecutor(sched.ExecGPU, exec); err != nil {
		s.Close()
		exec.Close()
		tb.Fatal(err)
	}
	m, err := s.RegisterThread("test")
	if err != nil {
		s.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("scheduler Close: %v", err)
		}
		log.Check(tb, n0)
	})
	return s, exec, m
}
