package kernels

import "github.com/vkjobs/vkjobs/gpu/bind"

// SPIR-V numbers the tests use to assemble and patch modules (SPIR-V
// specification, sections 3.20 Decoration, 3.7 Storage Class and 3.32
// Instructions). The reader itself lives in package gpu/bind.
const (
	spirvMagic = bind.SPVMagic

	opName                  = 5
	opEntryPoint            = 15
	opTypeInt               = 21
	opTypeFloat             = 22
	opTypeVector            = 23
	opTypeArray             = 28
	opTypeRuntimeArray      = 29
	opTypeStruct            = 30
	opTypePointer           = 32
	opConstant              = 43
	opSpecConstant          = 50
	opSpecConstantComposite = 51
	opVariable              = 59
	opDecorate              = 71
	opMemberDecorate        = 72

	decSpecID        = 1
	decBlock         = 2
	decBufferBlock   = 3
	decArrayStride   = 6
	decBuiltIn       = 11
	decBinding       = 33
	decDescriptorSet = 34
	decOffset        = 35

	builtInWorkgroupSize = 25

	// maxTypeDepth is the reader's bound on type nesting (bind).
	maxTypeDepth = 32

	scUniformConstant = 0
	scUniform         = 2
	scPushConstant    = 9
	scStorageBuffer   = 12
)
