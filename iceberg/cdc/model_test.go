package cdc

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// TestRandomizedModel applies 50 random windows of inserts, updates (some moving a
// row to another partition), deletes and upserts over 2,000 keys, several shards,
// keys touched many times per window, and compares the table after every commit
// with an in-memory model. With row lineage (DV mode) a key live before and after
// a window keeps its _row_id, and a key that becomes live gets a fresh one.
func TestRandomizedModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []fixtureOpt
	}{
		{"dv", nil},
		{"dv_partitioned", []fixtureOpt{partitioned()}},
		{"equality", []fixtureOpt{equality()}},
		{"dv_indexed", []fixtureOpt{indexed(64 << 20)}},
		{"dv_partitioned_indexed", []fixtureOpt{partitioned(), indexed(64 << 20)}},
		{"dv_indexed_collisions", []fixtureOpt{indexed(64 << 20), collisions()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, "model_"+tc.name, tc.opts...)
			f.shards = 3
			rng := rand.New(rand.NewPCG(42, uint64(len(tc.name))))
			states := []string{"CA", "TX", "WA", "NY", "OR"}
			const keys = 2000
			model := map[int64]string{}
			seed := cityRows(1000)
			for _, r := range seed {
				model[r[0].(int64)] = r[1].(string) + "|" + r[2].(string)
			}
			f.seed(t, seed, 250)
			lineage := RowLineage(f.table(t), f.format, f.keys)
			ids := f.rowIDs(t)
			seq := int64(0)
			for round := range 50 {
				before := maps.Clone(model)
				upsert := round%4 == 3
				var changes []row.Row
				for range 40 {
					id := int64(rng.IntN(keys) + 1)
					for range 1 + rng.IntN(4) { // touched several times in the window
						seq++
						cur, exists := model[id]
						city := fmt.Sprintf("c%d-%d", id, seq)
						st := states[rng.IntN(len(states))]
						var oldCity, oldSt string
						if exists {
							fmt.Sscanf(replaceBar(cur), "%s %s", &oldCity, &oldSt)
						}
						if tc.name == "equality" || !exists {
							// Equality deletes match on the key only; keep partitions stable there.
							if exists {
								st = oldSt
							}
						}
						switch {
						case upsert && rng.IntN(5) > 0:
							op := "c"
							if exists {
								op = "u"
							}
							changes = append(changes, change(op, id, city, st, seq))
							model[id] = city + "|" + st
						case !exists:
							changes = append(changes, change("c", id, city, st, seq))
							model[id] = city + "|" + st
						case rng.IntN(3) == 0:
							changes = append(changes, change("d", id, oldCity, oldSt, seq))
							delete(model, id)
						default:
							changes = append(changes, change("b", id, oldCity, oldSt, seq), change("u", id, city, st, seq))
							model[id] = city + "|" + st
						}
					}
				}
				rng.Shuffle(len(changes), func(i, j int) { changes[i], changes[j] = changes[j], changes[i] })
				f.apply(t, changes, upsert)
				if diff := diffModel(f.contents(t), model); diff != "" {
					t.Fatalf("round %d (upsert %v): table differs from the model:\n%s", round, upsert, diff)
				}
				if lineage {
					now := f.rowIDs(t)
					if diff := diffLineage(before, ids, now); diff != "" {
						t.Fatalf("round %d (upsert %v): row lineage:\n%s", round, upsert, diff)
					}
					ids = now
				}
			}
		})
	}
}

func replaceBar(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '|' {
			b[i] = ' '
		}
	}
	return string(b)
}

// diffLineage checks the row ids now of the live keys after a window against
// those before it (ids, of the keys live before, was): a key live before keeps its
// id, a new key has an id no live key had.
func diffLineage(was map[int64]string, ids, now map[int64]int64) string {
	old := map[int64]bool{}
	for _, id := range ids {
		old[id] = true
	}
	var b strings.Builder
	for key, id := range now {
		_, live := was[key]
		switch {
		case live && id != ids[key]:
			fmt.Fprintf(&b, "key %d: _row_id %d, was %d\n", key, id, ids[key])
		case !live && old[id]:
			fmt.Fprintf(&b, "new key %d: _row_id %d of a row live before\n", key, id)
		}
	}
	return b.String()
}
