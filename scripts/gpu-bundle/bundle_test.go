package gpubundle

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const maxBundleBytes = 56 << 20

// EnvBundleTest enables TestBundle (make test sets it): building the
// bundle links every GPU test binary and takes a minute or two.
const EnvBundleTest = "VKJOBS_GPU_BUNDLE_TEST"

// TestScripts: both scripts parse.
func TestScripts(t *testing.T) {
	for _, s := range []string{"build.sh", "run.sh"} {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
}

// findICD runs run.sh --find-icd on a system root with env added.
func findICD(t *testing.T, sysroot string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "run.sh", "--find-icd")
	cmd.Env = append(cleanEnv(), "VKJOBS_BUNDLE_SYSROOT="+sysroot)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// cleanEnv is the environment without the loader's variables.
func cleanEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "VK_DRIVER_FILES=") && !strings.HasPrefix(e, "VK_ICD_FILENAMES=") &&
			!strings.HasPrefix(e, "XDG_DATA_DIRS=") && !strings.HasPrefix(e, "XDG_CONFIG_DIRS=") {
			env = append(env, e)
		}
	}
	return env
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFindICD: the NVIDIA driver search on fake system roots.
func TestFindICD(t *testing.T) {
	// A manifest in the loader's folders wins.
	root := t.TempDir()
	write(t, root+"/usr/local/nvidia/lib64/libGLX_nvidia.so.0", "")
	write(t, root+"/etc/vulkan/icd.d/nvidia_icd.json", `{"ICD": {"library_path": "libGLX_nvidia.so.0"}}`)
	out, err := findICD(t, root)
	if err != nil || !strings.HasPrefix(out, root+"/etc/vulkan/icd.d/nvidia_icd.json (found in /etc/vulkan/icd.d)") {
		t.Errorf("manifest in /etc/vulkan/icd.d: %v\n%s", err, out)
	}

	// Only the library (a container without the manifest): one is written.
	root = t.TempDir()
	write(t, root+"/usr/local/nvidia/lib64/libGLX_nvidia.so.0", "")
	out, err = findICD(t, root)
	if err != nil || !strings.Contains(out, "written by run.sh for "+root+"/usr/local/nvidia/lib64/libGLX_nvidia.so.0") ||
		!strings.Contains(out, `"library_path": "`+root+`/usr/local/nvidia/lib64/libGLX_nvidia.so.0"`) {
		t.Errorf("library only: %v\n%s", err, out)
	}

	// A manifest under /usr/local/nvidia.
	root = t.TempDir()
	write(t, root+"/usr/local/nvidia/vulkan/icd.d/nvidia_icd.json", "{}")
	if out, err = findICD(t, root); err != nil || !strings.Contains(out, "found under /usr/local/nvidia") {
		t.Errorf("manifest under /usr/local/nvidia: %v\n%s", err, out)
	}

	// VK_DRIVER_FILES is taken as the user's choice.
	if out, err = findICD(t, root, "VK_DRIVER_FILES=/opt/x/icd.json"); err != nil || !strings.HasPrefix(out, "/opt/x/icd.json ($VK_DRIVER_FILES)") {
		t.Errorf("VK_DRIVER_FILES: %v\n%s", err, out)
	}

	// Nothing: an error saying where it looked and what to do.
	out, err = findICD(t, t.TempDir())
	if err == nil || !strings.Contains(out, "no NVIDIA Vulkan driver found") || !strings.Contains(out, "/usr/share/vulkan/icd.d") ||
		!strings.Contains(out, "NVIDIA_DRIVER_CAPABILITIES") {
		t.Errorf("no driver: err %v, want a failure naming the places searched\n%s", err, out)
	}

	// lavapipe, and a manifest that does not exist.
	root = t.TempDir()
	write(t, root+"/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", "{}")
	cmd := exec.Command("bash", "run.sh", "--driver", "lavapipe", "--find-icd")
	cmd.Env = append(cleanEnv(), "VKJOBS_BUNDLE_SYSROOT="+root)
	if b, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(b), root+"/usr/share/vulkan/icd.d/lvp_icd.x86_64.json") {
		t.Errorf("--driver lavapipe: %v\n%s", err, b)
	}
	cmd = exec.Command("bash", "run.sh", "--driver", "/nonexistent.json", "--find-icd")
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "--driver /nonexistent.json: no such ICD manifest") {
		t.Errorf("--driver /nonexistent.json: %v\n%s", err, b)
	}
}

// TestGlibcRefused: a machine whose glibc is older than the binaries need
// is refused before anything runs, naming both versions.
func TestGlibcRefused(t *testing.T) {
	b := t.TempDir()
	run, err := os.ReadFile("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	write(t, b+"/run.sh", string(run))
	write(t, b+"/MANIFEST.txt", "vkjobs GPU bundle\nglibc: 99.1 or newer\n")
	rep := t.TempDir()
	out, err := exec.Command("bash", b+"/run.sh", "--driver", "lavapipe", rep).CombinedOutput()
	report, _ := os.ReadFile(rep + "/report.txt")
	if err == nil || !strings.Contains(string(out), "is older than the 99.1 the bundle's binaries need") ||
		!regexp.MustCompile(`(?m)^  FAIL .* setup +glibc \S+ is older than 99\.1$`).Match(report) {
		t.Errorf("err %v, output:\n%s\nreport:\n%s", err, out, report)
	}
}

// glibc is the C library's own parts, which the bundle does not carry.
var glibc = regexp.MustCompile(`^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libanl\.so\.1)$`)

// sharedLib matches a shared library's file name.
var sharedLib = regexp.MustCompile(`\.so(\.[0-9.]+)?$`)

// TestBundle builds the bundle, checks its size and its libraries, and
// runs it in its short mode on lavapipe with the bundled loader and layer.
func TestBundle(t *testing.T) {
	if os.Getenv(EnvBundleTest) != "1" {
		t.Skipf("set %s=1 to build and run the GPU bundle (make test does)", EnvBundleTest)
	}
	dir := t.TempDir()
	bundle := filepath.Join(dir, "gpu-bundle")
	build := exec.Command("bash", "build.sh", bundle)
	start := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	} else {
		t.Logf("build.sh (%.0f s): %s", time.Since(start).Seconds(), lastLine(out))
	}

	// Size.
	var size int64
	filepath.WalkDir(bundle, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	t.Logf("bundle size: %d bytes (%.1f MiB)", size, float64(size)/(1<<20))
	if size > maxBundleBytes {
		t.Errorf("the bundle is %d bytes, over the 56 MiB limit", size)
	}

	// Contents: the packages with GPU tests, the programs, the packages.
	// Unpacked without dpkg-deb: run.sh's own reading of the packages'
	// ar archives (for machines without dpkg) must give the same files.
	un := filepath.Join(dir, "unpacked")
	unpack := exec.Command(filepath.Join(bundle, "run.sh"), "--unpack", un)
	unpack.Env = append(os.Environ(), "VKJOBS_BUNDLE_NO_DPKG=1")
	out, err := unpack.CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh --unpack: %v\n%s", err, out)
	}
	tests, err := os.ReadFile(filepath.Join(un, "payload/tests.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"gpu", "gpu/gfx", "kernels", "anim", "affinity/placement", "stress", "cmd/crowd", "cmd/kbench"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pkg) + ` `).Match(tests) {
			t.Errorf("tests.txt lacks %s, a package with GPU tests:\n%s", pkg, tests)
		}
	}
	for _, f := range []string{"payload/bin/crowd", "payload/bin/kbench", "payload/bin/probe", "payload/bin/imgcmp",
		"payload/share/assimp/models/BVH/01_01.bvh", "payload/tools/glslc", "payload/tools/glslangValidator", "payload/tools/spirv-as", "payload/pkg/cmd/crowd/testdata/cesium_man.gltf",
		"payload/pkg/gpu/gfx/testdata/gfx_golden.png"} {
		if _, err := os.Stat(filepath.Join(un, f)); err != nil {
			t.Error(err)
		}
	}

	// Libraries: with every folder of the bundle that holds a shared
	// library in LD_LIBRARY_PATH, ldd must resolve everything the
	// binaries, the loader and the layer need inside the bundle, except the
	// C library's own parts.
	var libDirs, elfs []string
	seen := map[string]bool{}
	filepath.WalkDir(un, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		name := d.Name()
		isLib := sharedLib.MatchString(name)
		if isLib && !seen[filepath.Dir(p)] {
			seen[filepath.Dir(p)] = true
			libDirs = append(libDirs, filepath.Dir(p))
		}
		if dir := filepath.Base(filepath.Dir(p)); isLib || strings.HasSuffix(name, ".test") || dir == "bin" || dir == "tools" {
			if b, err := os.ReadFile(p); err == nil && bytes.HasPrefix(b, []byte("\x7fELF")) {
				elfs = append(elfs, p)
			}
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(un, "vk/usr/lib/x86_64-linux-gnu/libvulkan.so.1")); err != nil {
		t.Errorf("no loader: %v", err)
	}
	ldPath := strings.Join(libDirs, ":")
	checked := 0
	for _, f := range elfs {
		cmd := exec.Command("ldd", f)
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+ldPath)
		b, err := cmd.CombinedOutput()
		if err != nil {
			if bytes.Contains(b, []byte("not a dynamic executable")) {
				continue // a static Go binary (imgcmp)
			}
			t.Errorf("ldd %s: %v\n%s", f, err, b)
			continue
		}
		checked++
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 1 || glibc.MatchString(filepath.Base(fields[0])) || strings.Contains(fields[0], "statically") {
				continue
			}
			if len(fields) < 3 || fields[1] != "=>" || !strings.HasPrefix(fields[2], un+"/") {
				t.Errorf("%s needs %s, which the bundle does not carry (ldd: %q)", strings.TrimPrefix(f, un+"/"), fields[0], sc.Text())
			}
		}
	}
	t.Logf("ldd: %d dynamic ELF files, every library in the bundle or glibc (LD_LIBRARY_PATH=%s)", checked, ldPath)
	if checked < 10 {
		t.Errorf("ldd checked only %d files", checked)
	}

	// The short run on lavapipe.
	rep := filepath.Join(dir, "report")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, filepath.Join(bundle, "run.sh"), "--short", "--driver", "lavapipe", rep)
	// Every carried library instead of this machine's: X11 for the crowd
	// and gpu/present, the C++ runtime for the layer.
	run.Env = append(cleanEnv(), "VKJOBS_BUNDLE_ALL_LIBS=1")
	start = time.Now()
	out, err = run.CombinedOutput()
	report, rerr := os.ReadFile(filepath.Join(rep, "report.txt"))
	t.Logf("run.sh --short --driver lavapipe (%.0f s), report.txt:\n%s", time.Since(start).Seconds(), report)
	if err != nil || rerr != nil {
		t.Fatalf("run.sh: %v (report: %v); output ends:\n%s", err, rerr, tail(out, 40))
	}
	r := string(report)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^device: llvmpipe`),
		regexp.MustCompile(`(?m)^driver: /\S*/lvp_icd\S*\.json`),
		regexp.MustCompile(`(?m)^mapped: /\S+/vk/usr/lib/x86_64-linux-gnu/libvulkan\.so\.1`), // the bundled loader
		regexp.MustCompile(`(?m)^mapped: /\S+/vk/usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation\.so`),
		regexp.MustCompile(`(?m)^mapped: \S*libvulkan_lvp\.so`),
		regexp.MustCompile(`(?m)^mapped: /\S+/cxx/usr/lib/x86_64-linux-gnu/libstdc\+\+\.so\.6`),
		regexp.MustCompile(`carried libraries used: .*libX11\.so\.6`),
		regexp.MustCompile(`carried shader tools used: glslangValidator glslc spirv-as`),
		regexp.MustCompile(`(?m)^  PASS +\S+s  test-gpu +\d+ passed, 0 failed`),
		regexp.MustCompile(`(?m)^  PASS +\S+s  kbench-quick`),
		regexp.MustCompile(`(?m)^  PASS +\S+s  compare-cpu-gpu +.*within the tolerance`),
		regexp.MustCompile(`(?m)^== crowd -offload gpu \(summary\) ==`),
	} {
		if !want.MatchString(r) {
			t.Errorf("report.txt lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`(?m)^mapped: /usr/\S*libvulkan\.so`).FindString(r); m != "" {
		t.Errorf("the system's loader ran, not the bundle's: %s", m)
	}
	if m := regexp.MustCompile(`(?m)^result: (\d+) of (\d+) steps passed`).FindStringSubmatch(r); m == nil || m[1] != m[2] {
		t.Errorf("not every step passed: %v", m)
	}
	for _, f := range []string{"kbench.txt", "crowd-cpu.png", "crowd-gpu.png", "crowd-auto.png", "logs/probe.log"} {
		if fi, err := os.Stat(filepath.Join(rep, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fakeBundle writes a bundle whose programs are shell scripts: run.sh's
// own logic (unpacking, steps, statuses, the report) on known outcomes.
func fakeBundle(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb not installed: cannot build the fake Debian packages")
	}
	b := t.TempDir()
	run, err := os.ReadFile("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	write(t, b+"/run.sh", string(run))
	write(t, b+"/MANIFEST.txt", "vkjobs GPU bundle\ncommit: fake\nglibc: 2.17 or newer\n")
	// The two packages run.sh needs: a loader and a layer (empty files).
	for _, p := range []struct{ name, files string }{
		{"libvulkan1", "usr/lib/x86_64-linux-gnu/libvulkan.so.1"},
		{"vulkan-validationlayers", "usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"},
	} {
		root := t.TempDir()
		write(t, root+"/DEBIAN/control", "Package: "+p.name+"\nVersion: 1.0\nArchitecture: amd64\nMaintainer: test <t@example.org>\nDescription: fake\n")
		for _, f := range strings.Fields(p.files) {
			write(t, root+"/"+f, `{"layer": {"api_version": "1.0.0"}}`)
		}
		os.MkdirAll(b+"/debs", 0o755)
		if out, err := exec.Command("dpkg-deb", "--root-owner-group", "-b", root, b+"/debs/"+p.name+"_1.0_amd64.deb").CombinedOutput(); err != nil {
			t.Fatalf("dpkg-deb -b: %v\n%s", err, out)
		}
	}
	pl := t.TempDir() + "/payload"
	script := func(path, body string) {
		write(t, pl+"/"+path, "#!/bin/sh\n"+body)
		os.Chmod(pl+"/"+path, 0o755)
	}
	write(t, pl+"/tests.txt", "a a.test\nb b.test\nc c.test\n")
	script("pkg/a/a.test", `echo "=== RUN   TestA"; echo "--- PASS: TestA (0.00s)"
echo "=== RUN   TestB"; echo "    b_test.go:1: boom"; echo "--- FAIL: TestB (0.00s)"
i=0; while [ $i -lt 30 ]; do echo "=== RUN   TestP$i"; echo "--- PASS: TestP$i (0.00s)"; i=$((i+1)); done; echo FAIL; exit 1`)
	script("pkg/b/b.test", `echo "=== RUN   TestHang"; echo "panic: test timed out after 1s"; printf '\trunning tests:\n\t\tTestHang (1s)\n'; exit 2`)
	script("pkg/c/c.test", `[ "$CI" = true ] && [ "$VKJOBS_VALIDATION" = 1 ] && [ -n "$VKJOBS_ASSIMP_MODELS" ] || { echo "--- FAIL: TestEnv"; exit 1; }
echo "=== RUN   TestS"; echo "    s_test.go:3: no display"; echo "--- SKIP: TestS (0.00s)"; echo PASS`)
	script("bin/probe", `echo "device: Fake GPU (discrete)"; echo "mapped: $(echo "$LD_LIBRARY_PATH" | cut -d: -f1)/libvulkan.so.1"`)
	script("bin/kbench", `echo "kbench 1.0: 2 CPUs; GPU: Fake GPU"; echo "kernel  size  gpu"; echo "saxpy   1e3   1.0"`)
	script("bin/crowd", `while [ $# -gt 0 ]; do [ "$1" = -out ] && out=$2; shift; done
echo png >"$out"; echo "frame time: median 1.00 ms, 95th percentile 2.00 ms"`)
	script("bin/imgcmp", `echo "imgcmp: $1 vs $2: 0 of 1 pixels (0.000%) differ by more than 8 in a channel, largest difference 0: within the tolerance"`)
	if out, err := exec.Command("tar", "-C", filepath.Dir(pl), "-czf", b+"/payload.tar.gz", "payload").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return b
}

// TestRunReportsFailures: a failing test, a hung one (the Go test
// binary's own time-out) and a skipped one each get their status and
// names in the report; the other steps still run; the exit status is 1.
// The packages are unpacked without dpkg-deb, as on a machine without it.
func TestRunReportsFailures(t *testing.T) {
	b := fakeBundle(t)
	icd := filepath.Join(t.TempDir(), "icd.json")
	write(t, icd, "{}")
	rep := t.TempDir()
	cmd := exec.Command("bash", b+"/run.sh", "--driver", icd, rep)
	cmd.Env = append(cleanEnv(), "VKJOBS_BUNDLE_NO_DPKG=1")
	out, err := cmd.CombinedOutput()
	report, rerr := os.ReadFile(rep + "/report.txt")
	if rerr != nil {
		t.Fatalf("no report: %v\n%s", rerr, out)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	r := string(report)
	for _, want := range []string{
		`(?m)^driver: ` + regexp.QuoteMeta(icd) + ` \(--driver\)$`,
		`(?m)^device: Fake GPU \(discrete\)$`,
		`(?m)^mapped: /\S+/vk/usr/lib/x86_64-linux-gnu/libvulkan\.so\.1$`,
		`(?m)^  FAIL +\S+s  test-a +31 passed, 1 failed, 0 skipped: TestB$`,
		`(?m)^-- test-a: the failing tests' messages \(logs/test-a.log\):\n(.*\n)*    b_test.go:1: boom\n--- FAIL: TestB`,
		`(?m)^  TIMEOUT +\S+s  test-b +0 passed, 0 failed, 0 skipped \(hung in: TestHang \)$`,
		`(?m)^  PASS +\S+s  test-c +0 passed, 0 failed, 1 skipped$`,
		`(?m)^  c TestS: s_test.go:3: no display$`,
		`(?m)^  PASS +\S+s  kbench-quick +GPU: Fake GPU$`,
		`(?m)^  PASS +\S+s  crowd-gpu +median 1.00 ms`,
		`(?m)^  PASS +\S+s  compare-cpu-auto +0 of 1 pixels`,
		`(?m)^result: 9 of 11 steps passed`,
		`carried libraries used: none`,
		`(?m)^saxpy   1e3   1.0$`,
		`(?m)^-- test-a: exit status 1; logs/test-a.log ends:$`,
	} {
		if !regexp.MustCompile(want).MatchString(r) {
			t.Errorf("report lacks %s", want)
		}
	}
	if strings.Contains(r, rep+"/work/") {
		t.Error("unpacked beside the report, though the temporary folder can run programs")
	}
	if t.Failed() {
		t.Logf("report:\n%s\noutput:\n%s", r, out)
	}
}
