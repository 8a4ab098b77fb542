package kernels

import (
	"fmt"

	"github.com/vkjobs/vkjobs/sched"
)

// localToModel returns the CPU local-to-model kernel. Work item s is
// skeleton s with B = Params[0] bones: model[s*B+b] = model[s*B+parent[b]] *
// local[s*B+b].Matrix() (just the local matrix for a root, parent < 0). With
// skin it also writes skin[s*B+b] = model[s*B+b] * inverseBind[b].
func localToModel(skin bool) sched.KernelFunc {
	return func(_ *sched.Ctx, d *sched.TaskData) error {
		nb := d.Params[0]
		if nb == 0 {
			return fmt.Errorf("Params[0] (bones per skeleton) is 0")
		}
		local, err := inSlice[Transform](d, 0, nb)
		if err != nil {
			return err
		}
		parents, err := inSlice[int32](d, 1, 1)
		if err != nil {
			return err
		}
		if err := needLen("input", 1, len(parents), uint64(nb), "Params[0] (bones per skeleton)"); err != nil {
			return err
		}
		parents = parents[:nb]
		for b, p := range parents {
			if p >= int32(b) {
				return fmt.Errorf("input stream 1: bone %d has parent %d; parents must come before their children", b, p)
			}
		}
		model, err := outSlice[Mat4](d, 0, nb)
		if err != nil {
			return err
		}
		end := uint64(d.End) * uint64(nb)
		if err := needLen("input", 0, len(local), end, "range end x bones"); err != nil {
			return err
		}
		if err := needLen("output", 0, len(model), end, "range end x bones"); err != nil {
			return err
		}
		var invBind, out []Mat4
		if skin {
			if invBind, err = inSlice[Mat4](d, 2, 1); err != nil {
				return err
			}
			if err := needLen("input", 2, len(invBind), uint64(nb), "Params[0] (bones per skeleton)"); err != nil {
				return err
			}
			if out, err = outSlice[Mat4](d, 1, nb); err != nil {
				return err
			}
			if err := needLen("output", 1, len(out), end, "range end x bones"); err != nil {
				return err
			}
		}
		for s := d.Begin; s < d.End; s++ {
			base := int(s) * int(nb)
			mod := model[base : base+int(nb)]
			var sk []Mat4
			if skin {
				sk = out[base : base+int(nb)]
			}
			poseChain(local[base:base+int(nb)], parents, mod, invBind, sk)
		}
		return nil
	}
}

// poseChain computes one skeleton: model[b] = model[parents[b]] *
// local[b].Matrix() (the local matrix for a root), and, when skin is not
// nil, skin[b] = model[b] * invBind[b]. The slices hold one skeleton
// (len(local) bones, parents validated: parents[b] < b). On amd64 with
// AVX2 and FMA it runs poseChainAVX2 (pose_amd64.go), elsewhere
// poseChainGo.
func poseChain(local []Transform, parents []int32, model, invBind, skin []Mat4) {
	if poseFast {
		// The assembly trusts these lengths: slicing checks them here.
		n := len(local)
		parents, model = parents[:n], model[:n]
		if skin != nil {
			invBind, skin = invBind[:n], skin[:n]
		} else {
			invBind = nil
		}
		poseChainAVX2(local, parents, model, invBind, skin)
		return
	}
	poseChainGo(local, parents, model, invBind, skin)
}

// poseChainGo is poseChain in pure Go, the reference of the assembly.
func poseChainGo(local []Transform, parents []int32, model, invBind, skin []Mat4) {
	model = model[:len(local)]
	for b, p := range parents[:len(local)] {
		if p >= 0 {
			affineMul(&model[p], &local[b], &model[b])
		} else {
			model[b] = local[b].Matrix()
		}
	}
	if skin != nil {
		skin = skin[:len(model)]
		for b := range skin {
			skinMul(&model[b], &invBind[b], &skin[b])
		}
	}
}

// affineMul writes parent * x.Matrix() to m. The parent is affine (its last
// row is 0 0 0 1: every model matrix is a product of local matrices), so
// the terms that row contributes are left out; the result is what Mat4.Mul
// computes for these inputs (up to the sign of a zero), in about half the
// operations, and m's last row is exactly 0 0 0 1 again.
func affineMul(parent *Mat4, x *Transform, m *Mat4) {
	// Columns of the local matrix (as in Transform.Matrix).
	b0, b1, b2, b4, b5, b6, b8, b9, b10 := x.basis()
	t0, t1, t2 := x.Trans[0], x.Trans[1], x.Trans[2]
	a := parent
	a0, a1, a2 := a[0], a[1], a[2]
	a4, a5, a6 := a[4], a[5], a[6]
	a8, a9, a10 := a[8], a[9], a[10]
	m[0] = a0*b0 + a4*b1 + a8*b2
	m[1] = a1*b0 + a5*b1 + a9*b2
	m[2] = a2*b0 + a6*b1 + a10*b2
	m[3] = 0
	m[4] = a0*b4 + a4*b5 + a8*b6
	m[5] = a1*b4 + a5*b5 + a9*b6
	m[6] = a2*b4 + a6*b5 + a10*b6
	m[7] = 0
	m[8] = a0*b8 + a4*b9 + a8*b10
	m[9] = a1*b8 + a5*b9 + a9*b10
	m[10] = a2*b8 + a6*b9 + a10*b10
	m[11] = 0
	m[12] = a0*t0 + a4*t1 + a8*t2 + a[12]
	m[13] = a1*t0 + a5*t1 + a9*t2 + a[13]
	m[14] = a2*t0 + a6*t1 + a10*t2 + a[14]
	m[15] = 1
}

// skinMul writes model * inverseBind to m for an affine model matrix: the
// upper three rows as Mat4.Mul sums them, the last row is inverseBind's.
func skinMul(model, inverseBind *Mat4, m *Mat4) {
	a := model
	a0, a1, a2 := a[0], a[1], a[2]
	a4, a5, a6 := a[4], a[5], a[6]
	a8, a9, a10 := a[8], a[9], a[10]
	a12, a13, a14 := a[12], a[13], a[14]
	for j := 0; j < 16; j += 4 {
		c := (*[4]float32)(inverseBind[j : j+4])
		o := (*[4]float32)(m[j : j+4])
		b0, b1, b2, b3 := c[0], c[1], c[2], c[3]
		o[0] = a0*b0 + a4*b1 + a8*b2 + a12*b3
		o[1] = a1*b0 + a5*b1 + a9*b2 + a13*b3
		o[2] = a2*b0 + a6*b1 + a10*b2 + a14*b3
		o[3] = b3
	}
}
