package cdc

import (
	"fmt"
	"strings"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// CreateSchema returns the schema of a table created by the merge-on-read write from
// the rows' data columns sc: the equality columns become required identifier fields.
func CreateSchema(sc *ibg.Schema, equalityColumns []string) (*ibg.Schema, error) {
	fields := sc.Fields()
	var ids []int
	for _, c := range equalityColumns {
		i := -1
		for j, f := range fields {
			if f.Name == c {
				i = j
			}
		}
		if i < 0 {
			return nil, config.Errorf(config.KeyEqualityColumns, "no column %q in the rows", c)
		}
		fields[i].Required = true
		ids = append(ids, fields[i].ID)
	}
	return ibg.NewSchemaWithIdentifiers(sc.ID, ids, fields...), nil
}

// Sharder assigns encoded keys to shards: a hash of the key modulo the number of
// shards, or, when shards_per_partition is below num_shards, one of the
// shards_per_partition shards chosen by the key's partition (consecutive shards from
// a start given by a hash of the partition). The partition must then be a function of
// the key (every partition source column an equality column): a key whose partition
// changed would otherwise reach two shards and collapse twice.
type Sharder struct {
	n, per int
	fields []shardPartField
}

type shardPartField struct {
	key int // index in the key values
	tr  ibg.Transform
}

// NewSharder returns the sharder of tbl's keys (equality columns keyCols).
func NewSharder(tbl *table.Table, keyCols []string, numShards, perPartition int) (*Sharder, error) {
	if numShards < 1 {
		return nil, config.Errorf(config.KeyNumShards, "must be at least 1, got %d", numShards)
	}
	s := &Sharder{n: numShards, per: perPartition}
	if perPartition <= 0 || perPartition >= numShards {
		s.per = numShards
		return s, nil
	}
	sc := tbl.Schema()
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		if _, void := f.Transform.(ibg.VoidTransform); void {
			continue
		}
		src, _ := sc.FindColumnName(f.SourceID())
		i := -1
		for j, k := range keyCols {
			if k == src {
				i = j
			}
		}
		if i < 0 {
			return nil, &config.ConfigError{Key: config.KeyShardsPerPartition, Err: fmt.Errorf(
				"%w: the table is partitioned by %q, which is not an equality column: a key's changes could span partitions and must stay in one shard",
				config.ErrUnsupported, src)}
		}
		s.fields = append(s.fields, shardPartField{key: i, tr: f.Transform})
	}
	return s, nil
}

// Shard returns the shard of the encoded key enc whose values are key.
func (s *Sharder) Shard(enc []byte, key []any) int {
	if s.per >= s.n {
		return Shard(enc, s.n)
	}
	var b strings.Builder
	for _, f := range s.fields {
		lit, err := literal(key[f.key])
		out := ibg.Optional[ibg.Literal]{}
		if err == nil {
			out = f.tr.Apply(ibg.Optional[ibg.Literal]{Valid: true, Val: lit})
		}
		if out.Valid {
			b.WriteString(out.Val.String())
		}
		b.WriteByte(0)
	}
	start := hashKey([]byte(b.String())) % uint64(s.n)
	return int((start + hashKey(enc)%uint64(s.per)) % uint64(s.n))
}
