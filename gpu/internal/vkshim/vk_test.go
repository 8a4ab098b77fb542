package vkshim

import (
	"bytes"
	"testing"
)

// TestConstants: the constants come from the Vulkan headers through cgo;
// a few checked against the values the specification gives them.
func TestConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"VK_MEMORY_PROPERTY_HOST_CACHED_BIT", uint64(MemoryPropertyHostCachedBit), 0x8},
		{"VK_BUFFER_USAGE_STORAGE_BUFFER_BIT", uint64(BufferUsageStorageBufferBit), 0x20},
		{"VK_PIPELINE_STAGE_HOST_BIT", uint64(PipelineStageHostBit), 0x4000},
		{"VK_ACCESS_HOST_READ_BIT", uint64(AccessHostReadBit), 0x2000},
		{"VK_DESCRIPTOR_TYPE_STORAGE_BUFFER", uint64(DescriptorTypeStorageBuffer), 7},
		{"VK_FORMAT_B8G8R8A8_UNORM", uint64(FormatB8g8r8a8Unorm), 44},
		{"VK_IMAGE_LAYOUT_PRESENT_SRC_KHR", ImageLayoutPresentSrc, 1000001002},
		{"VK_PRESENT_MODE_FIFO_KHR", uint64(PresentModeFifo), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func TestVersionString(t *testing.T) {
	for _, c := range []struct {
		v    uint32
		want string
	}{
		{MakeVersion(1, 0, 0), "1.0.0"},
		{MakeVersion(1, 3, 239), "1.3.239"},
		{4206847, "1.3.255"}, // a driver's apiVersion as reported
	} {
		if got := VersionString(c.v); got != c.want {
			t.Errorf("VersionString(%d) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestPackNames: names travel to C NUL-separated; a caller's trailing NUL
// is not doubled, and no names still give C a readable byte.
func TestPackNames(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []byte
	}{
		{nil, []byte{0}},
		{[]string{"VK_LAYER_KHRONOS_validation"}, []byte("VK_LAYER_KHRONOS_validation\x00")},
		{[]string{"a\x00", "bc"}, []byte("a\x00bc\x00")},
	} {
		if got := packNames(c.in); !bytes.Equal(got, c.want) {
			t.Errorf("packNames(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
