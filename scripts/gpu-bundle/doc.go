// Package gpubundle holds the tests of the GPU bundle: `make gpu-bundle`
// (build.sh) builds, on this Debian 12 machine, a folder of at most 56 MiB
// that proves the project on an x86-64 Linux machine with a GPU and its
// driver but no network, no root and no Go toolchain, and run.sh runs it
// there. The package has no code of its own; the bundle's two Go tools are
// its sub-packages probe (open the device, print it) and imgcmp (compare
// the crowd's CPU and GPU images).
//
// # What the bundle holds, and why so
//
// The tests are carried as test binaries (go test -c, stripped with -s -w,
// SPIR-V embedded by go:embed), one per package whose test binary links
// the Vulkan backend: build.sh finds them with go list -test (the test
// variant's dependencies include package gpu or the Vulkan binding), so a
// new package with GPU tests is carried without editing the script. Each
// runs in its package's folder of a tree laid out like the repository,
// as go test would run it, with every testdata folder of the module in its
// place (tests read their own, and some another package's: anim's read
// cmd/crowd's glTF models). The crowd and kbench are carried as
// programs. All of it is one gzip tarball (the binaries halve), because the
// uncompressed binaries alone would exceed the size limit.
//
// The Vulkan loader (libvulkan1), the validation layer
// (vulkan-validationlayers) and the C++ runtime the layer links (libstdc++6,
// libgcc-s1) are Debian 12's packages, fetched with apt-get download
// (cached, so that later builds need no network) and unpacked by run.sh
// with dpkg-deb -x, which needs no root (or, without dpkg, by reading the
// packages' ar archives itself, with xz): the packages keep their versions
// and copyright files, and the loader the tests meet is a released one,
// not whatever this machine happens to have. The loader is found by the
// binaries because package gpu dlopens libvulkan.so.1 and run.sh puts the
// unpacked library first in LD_LIBRARY_PATH. The bundled libstdc++ is used
// only when the machine's lacks the newest GLIBCXX version the layer
// needs: a newer libstdc++ serves older programs, so the machine's own is
// preferred (the driver may be linked against it).
//
// The crowd and gpu/present link X11 through GLFW (cgo). A GPU server may
// have no X11 libraries, so build.sh carries every shared library ldd
// lists for the binaries beyond the C library itself (libX11, libxcb,
// libXau, libXdmcp, libbsd, libmd), under their sonames, and two that the
// NVIDIA Vulkan driver (libGLX_nvidia.so.0) links and a container given
// only the driver's own libraries may lack: libXext and glvnd's
// libGLdispatch. run.sh uses each carried library only where the machine
// has none of that soname: the machine's own copies stay coherent with
// each other and with its driver. A headless build of the crowd without
// GLFW was rejected: it needs a build tag through packages this bundle
// does not own, to save about 1.7 MB. The glibc is not carried: build.sh
// records the newest glibc symbol version the binaries, loader and layer
// use (2.34 today), and run.sh refuses an older glibc up front.
//
// Tests that compile a user's shader call glslc, glslangValidator or
// spirv-as (internal/glslc), and under CI=true a missing tool fails the
// test: a GPU machine seldom has them, so the bundle carries Debian's
// (with libshaderc), and run.sh puts each on PATH only where the machine
// has none of that name.
//
// The crowd and the anim tests read the CMU motion capture of Debian's
// assimp-testmodels; the bundle carries the files they use and run.sh
// points VKJOBS_ASSIMP_MODELS at them (the one code change the bundle
// needed: the directory was a constant).
//
// # run.sh
//
// The driver: --driver nvidia (the default) takes $VK_DRIVER_FILES or
// $VK_ICD_FILENAMES when set, else the first nvidia*.json in the loader's
// manifest folders (/etc/vulkan/icd.d, /usr/share/vulkan/icd.d, the XDG
// ones, and under /usr/local/nvidia), else, as in containers where only
// the driver's libraries are mounted, it writes a manifest for
// libGLX_nvidia.so.0 found through ldconfig or in the usual folders; it
// fails naming every place it looked. --driver lavapipe takes Mesa's
// lvp_icd*.json (how CI runs the bundle); --driver FILE.json any manifest.
// It sets VK_DRIVER_FILES (and the older VK_ICD_FILENAMES) to that one
// manifest, so the device the tests choose is the GPU, and VK_LAYER_PATH to
// the bundled layer.
//
// The steps, each with a time-out (timeout(1)) that also keeps the time
// the later steps need, within --budget seconds (450 by default, so that
// the whole run, unpacking included, takes under 8 minutes): probe (the
// device chosen and why, every device enumerated, and the loader, layer
// and driver files mapped into the process: proof of which ran); every
// test binary with -test.v, CI=true (no device is a failure, not a
// skip) and VKJOBS_VALIDATION=1 (the tests' devices opened through
// gputest validate anyway and fail the test on any message; this puts the
// layer under every other device a test opens), skipping only the tests that need the build tools (shader
// staleness needs glslc, which CI checks; two crowd tests build the demo
// with go), and without CI=true for gpu/present when there is no display
// and no Xvfb, so that its window tests skip and say so; kbench -quick; the
// crowd, 1000 characters x 90 bones, 120 frames, headless, with -offload
// cpu, gpu (with a trace) and auto; imgcmp between the CPU image and the
// GPU and auto ones, with the crowd tests' tolerance. After every step it
// rewrites OUTDIR/report.txt, so a run cut short still leaves a report,
// and before every step too, with that step marked RUNNING and the
// result INCOMPLETE: a run killed mid-step (SIGKILL, an outer time limit)
// leaves a report that names the step it was in. The run's output ends
// with the device line, the steps and the result again, so that its last
// lines alone give the verdict however long the tables above them are.
// A test binary hung past its time-out is TIMEOUT with the tests it was
// running named. The binaries are unpacked into a temporary folder, or
// beside the report when that one is mounted noexec.
// --short is the CI variant: of each test binary only the tests whose
// names say GPU, Vulkan, lavapipe, device, validation, headless or quick
// (all of a binary where none does), with -test.short, since make test has
// already run every test through go test; kbench at two sizes; the crowd
// at 64 characters and 6 frames.
//
// # Tests
//
// TestScripts, TestFindICD, TestGlibcRefused and TestRunReportsFailures
// run in every go test ./..., in seconds: the scripts parse; the driver
// search finds a manifest, writes one for a bare libGLX_nvidia.so.0,
// honours VK_DRIVER_FILES and fails with a message that says where it
// looked (on fake system roots, VKJOBS_BUNDLE_SYSROOT); an older glibc is
// refused; and on a fake bundle whose programs are shell scripts, a
// failing, a hung and a skipped test are reported by name while the other
// steps still run.
//
// TestBundle, run by make test with VKJOBS_GPU_BUNDLE_TEST=1, builds the
// bundle, checks its size (at most 56 MiB) and, with ldd and the bundle's
// library folders as LD_LIBRARY_PATH, that every library its binaries,
// loader and layer need is in the bundle or is part of the C library, then
// runs run.sh --short --driver lavapipe with VKJOBS_BUNDLE_ALL_LIBS=1
// (every carried library instead of the machine's) and requires every step
// to pass on the bundled loader, layer, C++ runtime and X11 libraries.
package gpubundle
