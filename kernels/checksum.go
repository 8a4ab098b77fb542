package kernels

import (
	"hash/crc32"

	"github.com/vkjobs/vkjobs/sched"
)

// Checksum geometry: CRC32CBlocks checksums blocks of CRCBlockBytes bytes,
// read as CRCBlockWords little-endian uint32 words (its Factor).
const (
	CRCBlockBytes = 4096
	CRCBlockWords = CRCBlockBytes / 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32cBlocks writes out[i] = CRC-32C of bytes [4096i, 4096i+4096) of the
// input, clipped to the first Params[0] bytes (0 = all). It uses
// hash/crc32 (hardware CRC32 instructions); the shader uses a table, and the
// two agree bit for bit.
func crc32cBlocks(_ *sched.Ctx, d *sched.TaskData) error {
	words, err := inSlice[uint32](d, 0, 1)
	if err != nil {
		return err
	}
	out, err := outSlice[uint32](d, 0, 1)
	if err != nil {
		return err
	}
	n := validCount(d, CRCBlockBytes)
	if err := needLen("output", 0, len(out), uint64(d.End), "range end"); err != nil {
		return err
	}
	if err := needLen("input", 0, len(words), (min(n, uint64(d.End)*CRCBlockBytes)+3)/4, "range end x factor"); err != nil {
		return err
	}
	data := d.In[0].Bytes
	for i := d.Begin; i < d.End; i++ {
		lo, hi := blockRange(i, CRCBlockBytes, n)
		out[i] = crc32.Checksum(data[lo:hi], castagnoli)
	}
	return nil
}

// CRC32CCombine returns the CRC-32C of A followed by B, given crcA of A,
// crcB of B and the length of B in bytes (zlib's crc32_combine, for the
// Castagnoli polynomial). It does not allocate.
func CRC32CCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	// odd: the operator for one zero bit.
	odd[0] = 0x82f63b78 // reflected Castagnoli polynomial
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four zero bits
	for {
		gf2Square(&even, &odd) // one zero byte, then 4, 16, ...
		if lenB&1 != 0 {
			crcA = gf2Times(&even, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
		gf2Square(&odd, &even)
		if lenB&1 != 0 {
			crcA = gf2Times(&odd, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range square {
		square[n] = gf2Times(mat, mat[n])
	}
}

// CRC32COfBlocks returns the CRC-32C of n bytes given the per-block CRCs
// that CRC32CBlocks wrote for them (blocks of CRCBlockBytes, the last one
// possibly shorter): the whole-stream checksum without a second pass.
func CRC32COfBlocks(blockCRCs []uint32, n int64) uint32 {
	var crc uint32
	for i, c := range blockCRCs {
		l := min(n-int64(i)*CRCBlockBytes, CRCBlockBytes)
		if l <= 0 {
			break
		}
		crc = CRC32CCombine(crc, c, l)
	}
	return crc
}
