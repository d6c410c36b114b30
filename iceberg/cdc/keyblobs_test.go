package cdc

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// TestJoinKeyBlobs: the key join builds the key index blob of a large data file
// whose keys ascend in row order (none of a file whose keys do not); once the
// blob is attached to the table, a later join resolves that file by its blob,
// reading fewer bytes, with exactly the hits of its key column (DV-deleted rows
// excluded); a blob that fails its checks is ignored and the column read again.
func TestJoinKeyBlobs(t *testing.T) {
	ctx := context.Background()
	defer func(n int64) { MinBlobRows = n }(MinBlobRows)
	MinBlobRows = 1000
	f := newFixture(t, nil, "blobs", indexed(64<<20))
	rows := cityRows(6000) // ids 1..6000: the first file ascends, the second is shuffled
	rand.New(rand.NewPCG(3, 4)).Shuffle(3000, func(i, j int) { rows[3000+i], rows[3000+j] = rows[3000+j], rows[3000+i] })
	f.seed(t, rows, 3000)
	f.apply(t, []row.Row{change("d", 10, "", "", 1), change("d", 11, "", "", 1), change("d", 4000, "", "", 1)}, false)
	keys, _ := randomIDKeys(rand.New(rand.NewPCG(5, 6)), 500, 7000, 10, 11, 12, 4000, 4001)
	slices.SortFunc(keys, func(a, b []any) int { return int(a[0].(int64) - b[0].(int64)) })
	keys = slices.CompactFunc(keys, func(a, b []any) bool { return a[0] == b[0] })
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 64 << 20, IndexParts: 4}
	scan := func() Scanned {
		t.Helper()
		tbl := f.table(t)
		elems, _ := joinElements(t, tbl, r, keys, 4)
		j, err := r.JoinKeys(tbl, iterOf(elems))
		if err != nil || j == nil {
			t.Fatalf("join keys: %v, %v", j, err)
		}
		snap, files, _, err := j.Plan(ctx, tbl)
		if err != nil || len(files) != 2 {
			t.Fatalf("plan: %d files, %v", len(files), err)
		}
		sc, err := j.ScanFiles(ctx, tbl, snap, files)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	first := scan()
	if len(first.Blobs) != 1 || first.FromBlobs != 0 || first.Blobs[0].Rows != 3000 {
		t.Fatalf("first scan: %d blobs built, %d files by blob; want the ascending file's blob", len(first.Blobs), first.FromBlobs)
	}
	tbl := f.table(t)
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := tbl.Location() + "/metadata/test.keyindex.puffin"
	field, _ := tbl.Schema().FindFieldByName("id")
	snap := tbl.CurrentSnapshot()
	if err := keyblob.Write(fs.(iceio.WriteFileIO), path, snap.SnapshotID, snap.SequenceNumber, field.ID, first.Blobs); err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(ibg.Properties{keyblob.IndexProperty: path}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	byBlob := scan()
	if byBlob.FromBlobs != 1 || len(byBlob.Blobs) != 0 || byBlob.Bytes >= first.Bytes {
		t.Fatalf("with the blob: %d files by blob, %d blobs built, %d bytes read (column read %d)", byBlob.FromBlobs, len(byBlob.Blobs), byBlob.Bytes, first.Bytes)
	}
	samePackets(t, "by blob", first.Hits, byBlob.Hits)

	// A blob that fails its checks: the column is read, same hits.
	local := strings.TrimPrefix(path, "file://")
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := keyblob.Refs(fs, path, field.ID)
	if err != nil {
		t.Fatal(err)
	}
	ref := refs[first.Blobs[0].DataFile]
	b[ref.Offset+ref.Length/2] ^= 0xff
	if err := os.WriteFile(local, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := scan()
	if bad.FromBlobs != 0 {
		t.Fatalf("a corrupt blob resolved %d files", bad.FromBlobs)
	}
	samePackets(t, "corrupt blob", first.Hits, bad.Hits)
}

// samePackets requires the join packets of want and got to be equal, shard by shard.
func samePackets(t *testing.T, what string, want, got map[int][][]byte) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: hits for %d shards, want %d", what, len(got), len(want))
	}
	for s, ps := range want {
		if !slices.EqualFunc(got[s], ps, slices.Equal) {
			t.Fatalf("%s: shard %d: %d packets differ from the %d of the key column read", what, s, len(got[s]), len(ps))
		}
	}
}
