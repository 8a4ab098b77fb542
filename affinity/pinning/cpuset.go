package pinning

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MaxCPUID bounds the logical CPU IDs a CPUSet accepts (4M). Linux's own
// limit (CONFIG_NR_CPUS) is 8192 today; the bound only stops a corrupt
// sysfs file or a typo from allocating gigabytes.
const MaxCPUID = 1<<22 - 1

// CPUSet is a set of logical CPU IDs of any size. Unlike unix.CPUSet, which
// is fixed at 1024 bits and silently ignores larger IDs, it grows to hold
// any ID up to MaxCPUID, and the system calls of this package pass the
// kernel a mask as long as the kernel needs. Words are the platform's
// unsigned long, the layout sched_setaffinity expects.
//
// The zero value is the empty set. A CPUSet value shares its words with
// its copies: use Clone before modifying a set that others hold.
type CPUSet struct {
	w []uint
}

const wordBits = bits.UintSize

// Add adds cpu to the set. It panics on a negative ID or one above
// MaxCPUID (a programming error; parsed input is checked by ParseCPUList).
func (s *CPUSet) Add(cpu int) {
	if cpu < 0 || cpu > MaxCPUID {
		panic(fmt.Sprintf("pinning: CPUSet.Add(%d): CPU ID out of range [0, %d]", cpu, MaxCPUID))
	}
	i := cpu / wordBits
	for len(s.w) <= i {
		s.w = append(s.w, 0)
	}
	s.w[i] |= 1 << (uint(cpu) % wordBits)
}

// Remove removes cpu from the set (no-op if absent).
func (s *CPUSet) Remove(cpu int) {
	if cpu < 0 {
		return
	}
	if i := cpu / wordBits; i < len(s.w) {
		s.w[i] &^= 1 << (uint(cpu) % wordBits)
	}
}

// Has reports whether cpu is in the set.
func (s CPUSet) Has(cpu int) bool {
	if cpu < 0 {
		return false
	}
	i := cpu / wordBits
	return i < len(s.w) && s.w[i]&(1<<(uint(cpu)%wordBits)) != 0
}

// Count returns the number of CPUs in the set.
func (s CPUSet) Count() int {
	n := 0
	for _, w := range s.w {
		n += bits.OnesCount(w)
	}
	return n
}

// Max returns the largest CPU ID in the set, or -1 when it is empty.
func (s CPUSet) Max() int {
	for i := len(s.w) - 1; i >= 0; i-- {
		if s.w[i] != 0 {
			return i*wordBits + wordBits - 1 - bits.LeadingZeros(s.w[i])
		}
	}
	return -1
}

// CPUs returns the IDs in the set in increasing order.
func (s CPUSet) CPUs() []int {
	out := make([]int, 0, s.Count())
	for i, w := range s.w {
		for w != 0 {
			b := bits.TrailingZeros(w)
			out = append(out, i*wordBits+b)
			w &^= 1 << uint(b)
		}
	}
	return out
}

// Clone returns a copy that shares nothing with s.
func (s CPUSet) Clone() CPUSet {
	return CPUSet{w: append([]uint(nil), s.w...)}
}

// And returns the intersection of s and o.
func (s CPUSet) And(o CPUSet) CPUSet {
	n := min(len(s.w), len(o.w))
	r := CPUSet{w: make([]uint, n)}
	for i := range n {
		r.w[i] = s.w[i] & o.w[i]
	}
	return r
}

// Equal reports whether both sets hold the same CPUs.
func (s CPUSet) Equal(o CPUSet) bool {
	for i := 0; i < max(len(s.w), len(o.w)); i++ {
		var a, b uint
		if i < len(s.w) {
			a = s.w[i]
		}
		if i < len(o.w) {
			b = o.w[i]
		}
		if a != b {
			return false
		}
	}
	return true
}

// words returns the set as the kernel's mask: at least minWords words.
func (s CPUSet) words(minWords int) []uint {
	if len(s.w) >= minWords {
		return s.w
	}
	w := make([]uint, minWords)
	copy(w, s.w)
	return w
}

// String formats the set in the kernel's list format: "0-3,8,10-11"
// (empty string for the empty set). ParseCPUList reads it back.
func (s CPUSet) String() string {
	var b strings.Builder
	ids := s.CPUs()
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}

// ParseCPUList parses the kernel's CPU list format, as found in
// /sys/devices/system/cpu/online, thread_siblings_list and
// Cpus_allowed_list: comma-separated IDs and inclusive ranges, e.g.
// "0-3,8,10-11", surrounding white space ignored; "" is the empty set.
// Strides ("0-7:2") are not accepted.
func ParseCPUList(list string) (CPUSet, error) {
	var s CPUSet
	list = strings.TrimSpace(list)
	if list == "" {
		return s, nil
	}
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseCPUID(lo)
		if err != nil {
			return CPUSet{}, fmt.Errorf("pinning: CPU list %q: %w", list, err)
		}
		b := a
		if isRange {
			if b, err = parseCPUID(hi); err != nil {
				return CPUSet{}, fmt.Errorf("pinning: CPU list %q: %w", list, err)
			}
			if b < a {
				return CPUSet{}, fmt.Errorf("pinning: CPU list %q: range %d-%d is backwards", list, a, b)
			}
		}
		for c := a; c <= b; c++ {
			s.Add(c)
		}
	}
	return s, nil
}

func parseCPUID(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("bad CPU ID %q", s)
	}
	if n < 0 || n > MaxCPUID {
		return 0, fmt.Errorf("CPU ID %d out of range [0, %d]", n, MaxCPUID)
	}
	return n, nil
}
