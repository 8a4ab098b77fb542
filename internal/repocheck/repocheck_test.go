package repocheck

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/internal/version"
)

// repoRoot is the directory holding go.mod, above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// trackedFiles lists the repository's files (slash-separated, relative to
// root): git's index when this is a checkout, else every file on disk
// (an exported tree).
func trackedFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && len(out) > 0 {
		for _, f := range bytes.Split(out, []byte{0}) {
			if len(f) > 0 {
				files[string(f)] = true
			}
		}
		return files
	}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || strings.HasPrefix(d.Name(), ".repro")) {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	return files
}

// dirsOf is every directory that holds a tracked file.
func dirsOf(files map[string]bool) map[string]bool {
	dirs := map[string]bool{".": true}
	for f := range files {
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return dirs
}

// A text to check: a document's lines, or a Go file's comments.
type text struct {
	file string // relative to the root
	line int
	s    string
}

// textsOf returns the lines of the tracked documents (Markdown, shell
// scripts' and the Makefile's comments) and the comments of Go files.
func textsOf(t *testing.T, root string, files map[string]bool) []text {
	t.Helper()
	var out []text
	fset := token.NewFileSet()
	for f := range files {
		full := filepath.Join(root, filepath.FromSlash(f))
		base := path.Base(f)
		switch {
		case strings.HasSuffix(f, ".go"):
			src, err := os.ReadFile(full)
			if err != nil {
				continue // listed in the index, deleted in the work tree
			}
			af, err := parser.ParseFile(fset, full, src, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			for _, cg := range af.Comments {
				for _, c := range cg.List {
					line := fset.Position(c.Slash).Line
					for i, l := range strings.Split(c.Text, "\n") {
						out = append(out, text{f, line + i, l})
					}
				}
			}
		case strings.HasSuffix(f, ".md"), strings.HasSuffix(f, ".sh"), base == "Makefile", base == "LICENSE", strings.HasSuffix(f, ".glsl"), strings.HasSuffix(f, ".comp"):
			b, err := os.ReadFile(full)
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(make([]byte, 1<<16), 1<<20)
			n := 0
			for sc.Scan() {
				n++
				l := sc.Text()
				if !strings.HasSuffix(f, ".md") && base != "LICENSE" {
					// Code files: only their comments.
					i := strings.Index(l, "#")
					if j := strings.Index(l, "//"); strings.HasSuffix(f, ".glsl") || strings.HasSuffix(f, ".comp") {
						i = j
					}
					if i < 0 {
						continue
					}
					l = l[i:]
				}
				out = append(out, text{f, n, l})
			}
		}
	}
	return out
}

// outside are references to material a clone of the repository lacks.
var outside = regexp.MustCompile(`(?i:\bseeds? 0\d\d\b)|VULKAN_NOTES|\bSTYLE\.md|\bDESIGN\.md|\.\./shared\b|/work/shared|/work/notes`)

// pathRef finds words that look like file paths: at least one slash, or a
// Markdown document's name, with an extension.
var pathRef = regexp.MustCompile(`(?:\.{1,2}/)?[A-Za-z0-9_\-]+(?:/[A-Za-z0-9_.\-]+)*\.(?:go|md|sh|c|h|s|glsl|comp|vert|frag|spv|gltf|bvh|json|png|svg|txt|mod|sum)\b`)

// resolve reports whether ref, found in file, names a tracked file or
// directory: relative to the repository root or to the file's directory,
// or, for a path that does not climb with "..", as the tail of a tracked
// path (gpu-bundle/run.sh for scripts/gpu-bundle/run.sh).
func resolve(ref, file string, files, dirs map[string]bool) bool {
	ref = strings.TrimPrefix(ref, "./")
	for _, p := range []string{ref, path.Join(path.Dir(file), ref)} {
		p = path.Clean(p)
		if files[p] || dirs[p] {
			return true
		}
	}
	if !strings.HasPrefix(ref, "../") {
		for f := range files {
			if strings.HasSuffix(f, "/"+ref) {
				return true
			}
		}
	}
	return false
}

// skipRef reports references that are not meant as repository files:
// URLs and hosts, absolute paths of the system, placeholders and outputs
// named by the user (no directory, not a document), and patterns.
func skipRef(line, ref string, at int) bool {
	before := line[:at]
	if strings.HasSuffix(before, ".") || strings.HasSuffix(before, "-") {
		return true // the tail of a dotted name (github.com/...) or a word
	}
	if strings.HasSuffix(before, "/") || strings.HasSuffix(before, "~") || strings.HasSuffix(before, "$") ||
		strings.HasSuffix(before, "*") || strings.HasSuffix(before, "@") {
		return true // part of an absolute path, a URL, a variable or a glob
	}
	if i := strings.LastIndex(before, "://"); i >= 0 && !strings.ContainsAny(before[i:], " \t()<>\"'`") {
		return true // inside a URL
	}
	first := strings.SplitN(strings.TrimLeft(ref, "./"), "/", 2)[0]
	if strings.Contains(first, ".") && strings.Contains(ref, "/") {
		return true // a host or module path: github.com/..., golang.org/...
	}
	if !strings.Contains(ref, "/") && !strings.HasSuffix(ref, ".md") {
		return true // a bare name: an output (crowd.png), a placeholder (FILE.json), a file of the package
	}
	if first == strings.ToUpper(first) && strings.ContainsAny(first, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		return true // a placeholder directory: OUTDIR/report.txt, DIR/x.png
	}
	if strings.Contains(ref, "FILE.") || strings.Contains(ref, "NN_NN") {
		return true
	}
	return false
}

// TestNoReferencesOutside: no tracked document or Go comment sends the
// reader to material outside the repository: the design notes, style
// guide or Vulkan notes of the project's authors, a "../shared" folder, or
// source articles by an internal number ("seed 002") instead of their
// title, author, year and address.
func TestNoReferencesOutside(t *testing.T) {
	root := repoRoot(t)
	files := trackedFiles(t, root)
	self := "internal/repocheck/repocheck_test.go"
	var hits []string
	for _, x := range textsOf(t, root, files) {
		if x.file == self {
			continue
		}
		if m := outside.FindString(x.s); m != "" {
			hits = append(hits, x.file+":"+itoa(x.line)+": "+strings.TrimSpace(x.s))
		}
	}
	report(t, hits, "refer(s) to material outside the repository (cite the article itself, or move the design into docs/)")
}

// TestFileReferencesResolve: every file path a tracked document or Go
// comment names is a file (or directory) of the repository.
func TestFileReferencesResolve(t *testing.T) {
	root := repoRoot(t)
	files := trackedFiles(t, root)
	dirs := dirsOf(files)
	var hits []string
	for _, x := range textsOf(t, root, files) {
		for _, loc := range pathRef.FindAllStringIndex(x.s, -1) {
			ref := x.s[loc[0]:loc[1]]
			if skipRef(x.s, ref, loc[0]) || resolve(ref, x.file, files, dirs) {
				continue
			}
			hits = append(hits, x.file+":"+itoa(x.line)+": "+ref)
		}
	}
	report(t, hits, "name(s) files that are not in the repository")
}

func report(t *testing.T, hits []string, what string) {
	t.Helper()
	if len(hits) == 0 {
		return
	}
	sortStrings(hits)
	places := "places"
	if len(hits) == 1 {
		places = "place"
	}
	t.Errorf("%d %s %s:\n  %s", len(hits), places, what, strings.Join(hits, "\n  "))
}

// TestCheckerFindsBadReferences runs the two checks' matchers on lines
// that must and must not be reported.
func TestCheckerFindsBadReferences(t *testing.T) {
	files := map[string]bool{"README.md": true, "docs/design.md": true, "cmd/crowd/doc.go": true, "cmd/crowd/testdata/README.md": true, "BENCHMARKS.md": true}
	dirs := dirsOf(files)
	for _, c := range []struct {
		line, file string
		bad        bool
	}{
		{"see ../shared/DESIGN.md", "README.md", true},
		{"(seed 002's renderer)", "render/doc.go", true},
		{"(seeds 000, 001, 003)", "render/doc.go", true},
		{"VULKAN_NOTES: a loop", "gpu/doc.go", true},
		{"(STYLE.md, habit 10)", "affinity/doc.go", true},
		{"-seed 1 sets the layout", "cmd/crowd/doc.go", false},
		{"Frykholm, \"Parallel rendering\", 2009", "render/doc.go", false},
	} {
		if got := outside.MatchString(c.line); got != c.bad {
			t.Errorf("outside(%q) = %v, want %v", c.line, got, c.bad)
		}
	}
	for _, c := range []struct {
		line, file string
		bad        bool
	}{
		{"see cmd/crowd/doc.go", "README.md", false},
		{"see [design](../docs/design.md)", "cmd/crowd/testdata/README.md", true}, // no docs folder in cmd/crowd
		{"see [design](../../../docs/design.md)", "cmd/crowd/testdata/README.md", false},
		{"see [benchmarks](../BENCHMARKS.md)", "docs/design.md", false},
		{"the test reads anim/testdata/cmu.bvh", "README.md", true},
		{"see sched/gone.go", "README.md", true},
		{"run gpu-bundle/run.sh", "Makefile", true}, // no scripts/gpu-bundle/run.sh in this file list
		{"OUTDIR/report.txt", "README.md", false},
		{"see crowd/doc.go", "README.md", false}, // the tail of cmd/crowd/doc.go
		{"see NOTES.md", "README.md", true},
		{"https://example.com/a/b.md", "README.md", false},
		{"/usr/share/assimp/models/BVH/01_01.bvh", "README.md", false},
		{"writes crowd.png and -trace t.json", "README.md", false},
		{"github.com/vkjobs/vkjobs/anim/blob.go", "README.md", false},
		{"-timeline FILE.svg, cmd/crowd/FILE.png", "README.md", false},
	} {
		bad := false
		for _, loc := range pathRef.FindAllStringIndex(c.line, -1) {
			ref := c.line[loc[0]:loc[1]]
			if !skipRef(c.line, ref, loc[0]) && !resolve(ref, c.file, files, dirs) {
				bad = true
			}
		}
		if bad != c.bad {
			t.Errorf("%s: %q reported %v, want %v", c.file, c.line, bad, c.bad)
		}
	}
}

// TestVersionStated: the README and the changelog state the version the
// commands print.
func TestVersionStated(t *testing.T) {
	root := repoRoot(t)
	for _, f := range []string{"README.md", "CHANGELOG.md"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(version.Version)) {
			t.Errorf("%s does not state version %s (internal/version)", f, version.Version)
		}
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
