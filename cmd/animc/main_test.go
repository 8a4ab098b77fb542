package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestReport compresses the repository's small glTF model at two rates
// and checks what the report says: ACL's like-for-like table and where it
// comes from, errors between samples, the column legend, a line of
// progress per clip when stderr is not a terminal, and counts in words.
func TestReport(t *testing.T) {
	var out, errb bytes.Buffer
	err := run([]string{"-timing=false", "-rates", "0,30", "../crowd/testdata/rigged_simple.gltf"}, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	o := out.String()
	for _, want := range []string{
		"ACL v2.1.0 (commit 414689d5)", "01_03.bvh", "13.16", "9.84", "8.52",
		"p99 between", "max between", "Columns:", "kept ", "share ",
		"blob: ", ", 2 clips;",
	} {
		if !strings.Contains(o, want) {
			t.Errorf("report lacks %q:\n%s", want, o)
		}
	}
	if strings.Contains(o, "21.77") {
		t.Errorf("report still quotes ACL's whole-database figure:\n%s", o)
	}
	if n := strings.Count(errb.String(), "animc: ["); n != 2 {
		t.Errorf("%d progress lines, want one per clip:\n%s", n, errb.String())
	}

	out.Reset()
	if err := run([]string{"-timing=false", "../crowd/testdata/rigged_simple.gltf"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), ", 1 clip;") {
		t.Errorf("want \"1 clip\":\n%s", out.String())
	}
}

func TestVersionAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"-version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "animc ") {
		t.Errorf("-version: %v, %q", err, out.String())
	}
	out.Reset()
	if err := run([]string{"-h"}, &out, &errb); err != nil || !strings.Contains(errb.String(), "kept ") || !strings.Contains(errb.String(), "ACL v2.1.0") {
		t.Errorf("-h: %v, %q", err, errb.String())
	}
	if err := run([]string{"-rates", "x"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "-rates") {
		t.Errorf("-rates x: %v", err)
	}
	if err := run([]string{"-acl", "a.bvh"}, &out, &errb); err == nil {
		t.Error("-acl with a FILE: no error")
	}
}
