package row

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestFixed16StructField: a [16]byte struct field infers a fixed[16] column; its
// values are written (they were refused: "[16]uint8 for fixed[16]", so every row
// of such a struct went to the dead letter output) and read back into the field.
func TestFixed16StructField(t *testing.T) {
	type rec struct {
		ID int64    `iceberg:"id"`
		F  [16]byte `iceberg:"f"`
	}
	sc, err := InferStructSchema(reflect.TypeFor[rec]())
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Fields()[1].Type.String(); got != "fixed[16]" {
		t.Fatalf("column f is %s, want fixed[16]", got)
	}
	bb, err := NewBatchBuilder(sc, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Release()
	in := []rec{{ID: 1, F: [16]byte{1, 2, 3, 15: 0xff}}, {ID: 2}}
	for _, r := range in {
		if err := bb.AppendStruct(r); err != nil {
			t.Fatal(err)
		}
	}
	b := bb.NewBatch()
	defer b.Release()
	sr, err := NewStructReader(reflect.TypeFor[rec](), b.Schema(), sc)
	if err != nil {
		t.Fatal(err)
	}
	out, err := appendStructs[rec](sr, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("read %+v, want %+v", out, in)
	}
}
