package version

import (
	"regexp"
	"strings"
	"testing"
)

func TestVersionIsSemver(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(Version) {
		t.Fatalf("Version %q is not MAJOR.MINOR.PATCH", Version)
	}
}

func TestString(t *testing.T) {
	s := String("crowd")
	if !strings.HasPrefix(s, "crowd "+Version+" (") || !strings.Contains(s, "go1.") {
		t.Fatalf("String = %q", s)
	}
}
