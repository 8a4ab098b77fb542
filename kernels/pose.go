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
			loc := local[base : base+int(nb)]
			mod := model[base : base+int(nb)]
			for b, p := range parents {
				m := loc[b].Matrix()
				if p >= 0 {
					m = mod[p].Mul(&m)
				}
				mod[b] = m
			}
			if skin {
				sk := out[base : base+int(nb)]
				for b := range sk {
					sk[b] = mod[b].Mul(&invBind[b])
				}
			}
		}
		return nil
	}
}
