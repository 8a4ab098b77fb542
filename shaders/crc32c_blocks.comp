#version 450
#extension GL_GOOGLE_include_directive : require
// crc32c_blocks.comp: kernels.CRC32CBlocks, Reduce with Factor 1024 (words).
// out[i] = CRC-32C (Castagnoli, reflected, init and final xor 0xffffffff) of
// bytes [4096i, 4096i + 4096) of the input, clipped to the first params[0]
// bytes (0 = all). Bytes are the little-endian bytes of the uint words, so
// the result equals hash/crc32.Checksum(block, crc32.MakeTable(crc32.Castagnoli)).
// A block with no valid byte gives 0 (the CRC of no bytes).
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Data { uint words[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Crcs { uint crcs[]; };

// crcTable[b] is the reflected CRC-32C of the byte b (polynomial
// 0x82f63b78), computed by each workgroup into shared memory. It is not a
// constant array: indexing a constant array with data makes llvmpipe
// (lavapipe) compile the shader for more than 10 s at its first dispatch
// (1.3 s with one such access; 30 ms like this), which trips the
// executor's fence time-out on a machine with a cold shader cache.
shared uint crcTable[256];

uint crcByte(uint crc, uint b) {
    return crcTable[(crc ^ b) & 0xffu] ^ (crc >> 8);
}

void main() {
    // Every invocation helps fill the table before any may return: the
    // whole workgroup must reach the barrier.
    for (uint i = gl_LocalInvocationID.x; i < 256u; i += gl_WorkGroupSize.x) {
        uint c = i;
        for (uint k = 0u; k < 8u; k++) {
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
        }
        crcTable[i] = c;
    }
    barrier();
    uint item;
    if (!workItem(item)) {
        return;
    }
    uint n = pc.params[0];
    uint lo = item * 4096u; // bytes
    uint hi = lo + 4096u;
    if (n != 0u) {
        hi = min(hi, n);
    }
    uint crc = 0xffffffffu;
    uint nb = hi > lo ? hi - lo : 0u;
    uint w0 = item * 1024u;
    for (uint k = 0u; k < nb / 4u; k++) {
        uint w = words[w0 + k];
        crc = crcByte(crc, w & 0xffu);
        crc = crcByte(crc, (w >> 8) & 0xffu);
        crc = crcByte(crc, (w >> 16) & 0xffu);
        crc = crcByte(crc, w >> 24);
    }
    uint rest = nb & 3u;
    if (rest != 0u) {
        uint w = words[w0 + nb / 4u];
        for (uint k = 0u; k < rest; k++) {
            crc = crcByte(crc, (w >> (8u * k)) & 0xffu);
        }
    }
    crcs[item] = ~crc;
}
