package placement

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vkjobs/vkjobs/sched"
)

// Affinity is a task's affinity (sched.Affinity: where it may run) that
// can be parsed, printed and used as a command-line flag (it implements
// flag.Value and encoding.TextMarshaler/TextUnmarshaler). Its values:
//
//	"cpu"       sched.AnyWorker: any CPU worker, or a registered thread helping in Wait
//	"thread:N"  sched.OnThread(N): only registered thread N (0..65535; the order of
//	            RegisterThread calls), e.g. a main or render thread
//	"gpu"       sched.GPU: the executor attached as sched.ExecGPU
//	"spu"       sched.SPU: the executor attached as sched.ExecSPU (see package spu)
//	"auto"      sched.Auto: the scheduler's Placer chooses per task (see Placer);
//	            without a Placer, CPU workers
//
// Parsing is case-insensitive, ignores surrounding white space, and also
// accepts "any" and "worker" for "cpu" and sched's own spelling
// "thread(N)". N must be written as String writes it: decimal digits
// without a sign or leading zeros ("thread:7", not "thread:+7" or
// "thread:007"), so that each thread has one spelling and a flag or a
// configuration file reads back as written. The zero Affinity is "cpu".
//
//	var where placement.Affinity
//	flag.Var(&where, "where", "where tasks run: cpu, gpu, spu, auto, thread:N")
//	task.Affinity = where.Affinity()
type Affinity sched.Affinity

// ParseAffinity parses s (see Affinity).
func ParseAffinity(s string) (Affinity, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "cpu", "any", "worker":
		return Affinity(sched.AnyWorker), nil
	case "gpu":
		return Affinity(sched.GPU), nil
	case "spu":
		return Affinity(sched.SPU), nil
	case "auto":
		return Affinity(sched.Auto), nil
	}
	num, ok := strings.CutPrefix(t, "thread:")
	if !ok {
		if n, ok2 := strings.CutPrefix(t, "thread("); ok2 {
			num, ok = strings.CutSuffix(n, ")")
		}
	}
	if ok {
		i, ok := parseThread(num)
		if !ok {
			return 0, fmt.Errorf("placement: bad thread index %q in %q: want 0..65535 in decimal, without a sign or leading zeros", num, s)
		}
		return Affinity(sched.OnThread(i)), nil
	}
	return 0, fmt.Errorf("placement: unknown affinity %q: want cpu, gpu, spu, auto or thread:N", s)
}

// parseThread parses a thread index in the one form String writes it:
// 0..65535 in decimal digits, with no sign and no leading zero (but "0"
// itself). strconv.Atoi is not used because it accepts a sign, and "-0"
// or "+5" would name a thread in a second spelling.
func parseThread(num string) (int, bool) {
	if num == "" || len(num) > len("65535") || (num[0] == '0' && len(num) > 1) {
		return 0, false
	}
	i := 0
	for _, c := range []byte(num) {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = 10*i + int(c-'0')
	}
	return i, i <= 0xffff
}

// Affinity returns the sched.Affinity to put in a sched.Task.
func (m Affinity) Affinity() sched.Affinity { return sched.Affinity(m) }

// Thread reports the registered thread index of a "thread:N" mask.
func (m Affinity) Thread() (int, bool) { return sched.Affinity(m).Thread() }

// Device reports whether the mask sends tasks to an executor (GPU or SPU)
// rather than to CPU threads; Auto is not a device (the Placer decides).
func (m Affinity) Device() bool {
	a := sched.Affinity(m)
	return a == sched.GPU || a == sched.SPU
}

// String formats the mask so that ParseAffinity reads it back: "cpu", "gpu",
// "spu", "auto", "thread:N", or sched's form for an invalid value.
func (m Affinity) String() string {
	a := sched.Affinity(m)
	if i, ok := a.Thread(); ok {
		return "thread:" + strconv.Itoa(i)
	}
	return a.String()
}

// Set parses s into m (flag.Value).
func (m *Affinity) Set(s string) error {
	v, err := ParseAffinity(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (m Affinity) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Affinity) UnmarshalText(b []byte) error { return m.Set(string(b)) }
