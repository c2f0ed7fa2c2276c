package stage

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Sample is a random share of the uploads verify --all checks, for a nightly check of a large
// store: a fraction of them (Fraction, 0 < f <= 1), or as many as fit in Bytes. The same Seed
// picks the same uploads from the same store.
type Sample struct {
	Fraction float64
	Bytes    int64
	Seed     uint64
}

// Pick returns the uploads of es the sample takes, in id order. The uploads are shuffled by the
// seed from id order, so the choice depends on the store's uploads and the seed only; then a
// fraction takes the first ceil(f*n), a byte budget every upload in that order that still fits.
// At least one upload is taken from a store that has any: a check that checks nothing passes
// on nothing.
func (s Sample) Pick(es []Checked) []Checked {
	if len(es) == 0 {
		return nil
	}
	order := slices.Clone(es)
	slices.SortFunc(order, func(a, b Checked) int { return strings.Compare(a.ID, b.ID) })
	r := rand.New(rand.NewPCG(s.Seed, 0x6174746163686374)) // "attachct"
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var picked []Checked
	if s.Bytes > 0 {
		var total int64
		for _, e := range order {
			if total+e.Size <= s.Bytes {
				picked = append(picked, e)
				total += e.Size
			}
		}
		if len(picked) == 0 {
			picked = order[:1]
		}
	} else {
		n := int(math.Ceil(s.Fraction*float64(len(order)) - 1e-9))
		picked = order[:min(max(n, 1), len(order))]
	}
	picked = slices.Clone(picked)
	slices.SortFunc(picked, func(a, b Checked) int { return strings.Compare(a.ID, b.ID) })
	return picked
}
