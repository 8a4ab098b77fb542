// Command probe opens the Vulkan device the way the tests and programs of
// this project do (package gpu's automatic selection, or VKJOBS_DEVICE),
// with the validation layer on, and prints which device was chosen and
// why, every device the loader enumerated, the device's properties that
// change code paths (host-visible streams, robust buffer access,
// timestamps, binding alignments), and which Vulkan loader, layer and
// driver files the process mapped. The GPU bundle's run.sh runs it first,
// so that its report says what the later steps ran on.
//
// Usage: probe [-validate=false]
//
// Exit status: 0 when a device opened, 1 otherwise (the error is printed).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/vkjobs/vkjobs/gpu"
)

func main() {
	validate := flag.Bool("validate", true, "enable the Vulkan validation layer (fails when the layer cannot be loaded)")
	flag.Parse()
	os.Exit(run(*validate, os.Stdout))
}

func run(validate bool, w io.Writer) int {
	dev, err := gpu.Open(gpu.Options{Validation: validate, AppName: "vkjobs-bundle-probe"})
	if err != nil {
		fmt.Fprintf(w, "probe: no device: %v\n", err)
		fmt.Fprint(w, mapped())
		return 1
	}
	defer dev.Close()
	sel := dev.Selection()
	fmt.Fprintf(w, "device: %s (%v, Vulkan %s, vendor 0x%04x, device 0x%04x, driver version 0x%x)\n",
		sel.Chosen.Name, sel.Chosen.Type, sel.Chosen.APIVersion, sel.Chosen.VendorID, sel.Chosen.DeviceID, sel.Chosen.Driver)
	fmt.Fprintf(w, "chosen: %s\n", sel.Reason)
	for _, c := range sel.Candidates {
		fmt.Fprintf(w, "candidate: %v compute=%v timestamps=%v\n", c, c.Compute, c.Timestamps)
	}
	st, un := dev.BindingAlignment()
	fmt.Fprintf(w, "properties: host-visible streams=%v, robust buffer access=%v, timestamps=%v, binding alignment storage=%d uniform=%d\n",
		dev.HostVisible(), dev.RobustBufferAccess(), dev.Timestamps(), st, un)
	fmt.Fprintf(w, "validation: %v\n", validate)
	fmt.Fprint(w, mapped())
	if msgs, n := dev.Messages(); n > 0 {
		for _, m := range msgs {
			fmt.Fprintf(w, "message: %v\n", m)
		}
		fmt.Fprintf(w, "probe: %d validation error(s) opening the device\n", n)
		return 1
	}
	return 0
}

// mapped lists the Vulkan loader, layer and driver files in this process's
// memory map: proof of which loader (the bundle's or the system's) and
// which driver ran.
func mapped() string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return fmt.Sprintf("mapped: %v\n", err)
	}
	defer f.Close()
	var libs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		p := fields[len(fields)-1]
		base := p[strings.LastIndexByte(p, '/')+1:]
		for _, k := range []string{"libvulkan", "VkLayer", "nvidia", "lvp", "radeon", "intel", "libstdc++"} {
			if strings.Contains(base, k) && !slices.Contains(libs, p) {
				libs = append(libs, p)
			}
		}
	}
	var b strings.Builder
	for _, l := range libs {
		fmt.Fprintf(&b, "mapped: %s\n", l)
	}
	return b.String()
}
