// Command benchreport turns `go test -bench` output into the generated
// block of BENCHMARKS.md: medians over -count runs, grouped by benchmark,
// each variant's time as a ratio to the group's "sched" variant (the
// scheduler's own), or to its first variant when there is none. It
// replaces only the text between the "<!-- begin generated -->" and
// "<!-- end generated -->" lines, keeping every other section (the
// hand-written ones between their own begin/end markers) as it is; it
// creates the file, or appends the block, when they are missing.
//
//	go test -run '^$' -bench . -count 5 ./sched/ > /tmp/bench.out
//	go run ./scripts/benchreport -in /tmp/bench.out -meta /tmp/meta.md -md BENCHMARKS.md
//
// scripts/benchmarks.sh (make benchmarks) runs the chosen benchmarks and
// this program.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const (
	beginMarker = "<!-- begin generated -->"
	endMarker   = "<!-- end generated -->"
)

func main() {
	in := flag.String("in", "", "go test -bench output (default stdin)")
	meta := flag.String("meta", "", "Markdown put before the tables (machine, date, load, command)")
	md := flag.String("md", "BENCHMARKS.md", "the file whose generated block is replaced")
	flag.Parse()
	if err := run(*in, *meta, *md); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(in, metaPath, mdPath string) error {
	var r io.Reader = os.Stdin
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	res, err := parse(r)
	if err != nil {
		return err
	}
	if len(res) == 0 {
		return errors.New("no benchmark results in the input")
	}
	var meta []byte
	if metaPath != "" {
		if meta, err = os.ReadFile(metaPath); err != nil {
			return err
		}
	}
	old, err := os.ReadFile(mdPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out, err := splice(old, block(string(meta), res))
	if err != nil {
		return fmt.Errorf("%s: %w", mdPath, err)
	}
	return os.WriteFile(mdPath, out, 0o644)
}

// result is one benchmark's runs.
type result struct {
	pkg     string
	name    string               // without "Benchmark" and the -GOMAXPROCS suffix
	metrics map[string][]float64 // unit -> one value per run
	units   []string             // in the order first seen
}

var lineRE = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)

// parse reads go test -bench output: "pkg:" lines name the package of the
// benchmark lines that follow; each benchmark line holds value-unit pairs.
func parse(r io.Reader) ([]*result, error) {
	var out []*result
	byKey := map[string]*result{}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("benchmark line with an odd number of fields: %q", line)
		}
		key := pkg + " " + m[1]
		res := byKey[key]
		if res == nil {
			res = &result{pkg: pkg, name: m[1], metrics: map[string][]float64{}}
			byKey[key] = res
			out = append(out, res)
		}
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("value %q in %q: %v", f[i], line, err)
			}
			u := f[i+1]
			if _, ok := res.metrics[u]; !ok {
				res.units = append(res.units, u)
			}
			res.metrics[u] = append(res.metrics[u], v)
		}
	}
	return out, sc.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// perItem returns the benchmark's first custom time unit other than ns/op
// (ns/task, ns/packet, ns/elem), or "".
func (r *result) perItem() string {
	for _, u := range r.units {
		if u != "ns/op" && strings.HasPrefix(u, "ns/") {
			return u
		}
	}
	return ""
}

// group splits a name into the group (all but the last element) and the
// variant (the last element): "ParallelFor/1M/sched" -> "ParallelFor/1M",
// "sched". A name without a slash is its own group and variant.
func group(name string) (string, string) {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[:i], name[i+1:]
	}
	return name, name
}

func num(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 0.1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

// block renders the generated block (without its markers).
func block(meta string, res []*result) string {
	var b strings.Builder
	if meta = strings.TrimSpace(meta); meta != "" {
		b.WriteString(meta + "\n\n")
	}
	pkg := ""
	for i := 0; i < len(res); {
		g, _ := group(res[i].name)
		j := i
		for j < len(res) && res[j].pkg == res[i].pkg {
			if gj, _ := group(res[j].name); gj != g {
				break
			}
			j++
		}
		rs := res[i:j]
		if rs[0].pkg != pkg {
			pkg = rs[0].pkg
			fmt.Fprintf(&b, "### %s\n\n", pkg)
		}
		base := rs[0]
		for _, r := range rs {
			if _, v := group(r.name); v == "sched" {
				base = r
			}
		}
		_, bv := group(base.name)
		unit := base.perItem()
		runs := "runs each"
		if n := len(base.metrics["ns/op"]); n == 1 {
			runs = "1 run"
		} else {
			runs = fmt.Sprintf("%d %s", n, runs)
		}
		fmt.Fprintf(&b, "`%s`, %s:\n\n", g, runs)
		fmt.Fprintf(&b, "| variant | median ns/op |")
		if unit != "" {
			fmt.Fprintf(&b, " median %s |", unit)
		}
		fmt.Fprintf(&b, " allocs/op | time / %s |\n|---|---:|", bv)
		if unit != "" {
			b.WriteString("---:|")
		}
		b.WriteString("---:|---:|\n")
		bt := median(base.metrics["ns/op"])
		for _, r := range rs {
			_, v := group(r.name)
			t := median(r.metrics["ns/op"])
			fmt.Fprintf(&b, "| %s | %s |", v, num(t))
			if unit != "" {
				fmt.Fprintf(&b, " %s |", num(median(r.metrics[unit])))
			}
			allocs := "-"
			if a, ok := r.metrics["allocs/op"]; ok {
				allocs = num(median(a))
			}
			ratio := "-"
			if bt > 0 {
				ratio = fmt.Sprintf("%.2fx", t/bt)
			}
			fmt.Fprintf(&b, " %s | %s |\n", allocs, ratio)
		}
		b.WriteString("\n")
		i = j
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// splice puts body between the generated block's marker lines in md (a
// marker counts only as a line of its own; one quoted in a sentence does
// not), keeping everything else byte for byte. Without markers the block
// is appended (and a file without content gets a "# Benchmarks" title). A
// marker without its partner, or a repeated one, is an error: the file is
// left alone rather than guessed at.
func splice(md []byte, body string) ([]byte, error) {
	if len(bytes.TrimSpace(md)) == 0 {
		md = []byte("# Benchmarks\n")
	}
	// Byte offsets of the marker lines: begin's start, end's end.
	begin, end, nb, ne := -1, -1, 0, 0
	for off := 0; off < len(md); {
		n := bytes.IndexByte(md[off:], '\n')
		if n < 0 {
			n = len(md) - off
		}
		switch string(bytes.TrimSpace(md[off : off+n])) {
		case beginMarker:
			nb++
			begin = off
		case endMarker:
			ne++
			end = off + n
			if off+n < len(md) && md[off+n] == '\n' {
				end++
			}
		}
		off += n + 1
	}
	blk := beginMarker + "\n" + body + endMarker + "\n"
	switch {
	case nb == 0 && ne == 0:
		out := bytes.TrimRight(md, "\n")
		return append(out, []byte("\n\n"+blk)...), nil
	case nb != 1 || ne != 1:
		return nil, fmt.Errorf("want one %q and one %q line, found %d and %d", beginMarker, endMarker, nb, ne)
	case end <= begin:
		return nil, fmt.Errorf("%q comes before %q", endMarker, beginMarker)
	}
	var out []byte
	out = append(out, md[:begin]...)
	out = append(out, blk...)
	out = append(out, md[end:]...)
	return out, nil
}
