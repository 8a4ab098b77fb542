package placement

import (
	"strconv"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestParseAffinityThreadIndexOnlyCanonical: a thread index parses only in
// the decimal form String writes; a sign, leading zeros, another base or
// white space inside is refused with an error naming the text.
func TestParseAffinityThreadIndexOnlyCanonical(t *testing.T) {
	for _, bad := range []string{
		"thread:+5", "thread:-0", "thread:+0", "thread:007", "thread:00", "thread:0065535",
		"thread(+5)", "thread(-0)", "thread(007)", "THREAD:+5",
		"thread:0x10", "thread:1_000", "thread: 5", "thread:5 5", "thread:5)", "thread( 5)",
		"thread:65536", "thread:99999", "thread:100000", "thread:\u0663",
	} {
		_, err := ParseAffinity(bad)
		if err == nil {
			t.Errorf("ParseAffinity(%q) accepted", bad)
		} else if !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("ParseAffinity(%q): %v does not name the text", bad, err)
		}
	}
}

// TestParseAffinityThreadIndexAcceptance: every index text made of digits,
// signs and spaces, up to five characters, is accepted exactly when it is
// the decimal String writes for a thread, in both spellings (white space
// around the whole text is ignored, so after "thread:" a trailing space
// is too).
func TestParseAffinityThreadIndexAcceptance(t *testing.T) {
	const alphabet = "01569+- "
	var text []byte
	var walk func(n int)
	accepted := 0
	walk = func(n int) {
		if len(text) > 0 {
			k := string(text)
			for form, s := range []string{"thread:" + k, "thread(" + k + ")"} {
				num := k
				if form == 0 {
					num = strings.TrimRight(k, " ")
				}
				i, err := strconv.Atoi(num)
				canonical := err == nil && i >= 0 && i <= 0xffff && strconv.Itoa(i) == num
				if canonical {
					accepted++
				}
				m, err := ParseAffinity(s)
				switch {
				case canonical && (err != nil || m.Affinity() != sched.OnThread(i)):
					t.Fatalf("ParseAffinity(%q) = %v, %v; want thread %d", s, m, err, i)
				case !canonical && err == nil:
					t.Fatalf("ParseAffinity(%q) accepted as %v", s, m)
				}
			}
		}
		if n == 0 {
			return
		}
		for j := range len(alphabet) {
			text = append(text, alphabet[j])
			walk(n - 1)
			text = text[:len(text)-1]
		}
	}
	walk(5)
	if accepted == 0 {
		t.Fatal("no index accepted: the enumeration tests nothing")
	}
}

// TestParseAffinityEverySchedSpellingRoundTrips: sched.Affinity's own
// String ("thread(N)") parses back for every thread, beside the
// placement spelling that TestAffinityEveryThreadRoundTrips covers.
func TestParseAffinityEverySchedSpellingRoundTrips(t *testing.T) {
	for i := range 1 << 16 {
		a := sched.OnThread(i)
		m, err := ParseAffinity(a.String())
		if err != nil || m.Affinity() != a {
			t.Fatalf("thread %d: %q parsed as %v, %v", i, a.String(), m, err)
		}
	}
}
