package cdc

import (
	"cmp"
	"maps"
	"slices"
)

// MergeResolutions merges resolutions of disjoint key sets (one per shard) made
// against the same snapshot into one, so that the committer brings them up to date
// with one planning pass instead of one per shard. Resolutions of different
// snapshots stay apart: the result holds one resolution per snapshot, oldest
// snapshot id first. A data file one shard read and another pruned is treated as
// read by both (pruning proved the other's keys absent from it).
func MergeResolutions(rs []*Resolution) []*Resolution {
	bySnap := map[int64][]*Resolution{}
	for _, r := range rs {
		if r != nil {
			bySnap[r.SnapshotID] = append(bySnap[r.SnapshotID], r)
		}
	}
	out := make([]*Resolution, 0, len(bySnap))
	for _, id := range slices.Sorted(maps.Keys(bySnap)) {
		group := bySnap[id]
		if len(group) == 1 {
			out = append(out, group[0])
			continue
		}
		m := &Resolution{SnapshotID: id}
		files := map[string]*FileHits{}
		scanned := map[string]bool{}
		for _, r := range group {
			offset := int32(len(m.Keys))
			m.Keys = append(m.Keys, r.Keys...)
			for _, p := range r.Scanned {
				scanned[p] = true
			}
			for _, f := range r.Files {
				h := files[f.Path]
				if h == nil {
					h = &FileHits{Path: f.Path, Deletes: f.Deletes}
					files[f.Path] = h
				}
				h.Positions = append(h.Positions, f.Positions...)
				for _, k := range f.KeyIndexes {
					h.KeyIndexes = append(h.KeyIndexes, k+offset)
				}
			}
		}
		for _, p := range slices.Sorted(maps.Keys(files)) {
			h := files[p]
			sortHits(h)
			m.Files = append(m.Files, *h)
		}
		m.Scanned = slices.Sorted(maps.Keys(scanned))
		out = append(out, m)
	}
	return out
}

// sortHits sorts h's positions ascending, keeping KeyIndexes parallel.
func sortHits(h *FileHits) {
	type hit struct {
		pos int64
		key int32
	}
	hits := make([]hit, len(h.Positions))
	for i := range hits {
		hits[i] = hit{h.Positions[i], -1}
		if i < len(h.KeyIndexes) {
			hits[i].key = h.KeyIndexes[i]
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.pos, b.pos) })
	for i, x := range hits {
		h.Positions[i] = x.pos
		if i < len(h.KeyIndexes) {
			h.KeyIndexes[i] = x.key
		}
	}
}
