package cdc

import (
	"fmt"
	"strings"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// DataSchema returns sc, the schema of change rows, without the control columns,
// which must be in it: the change type column (a string) when configured and the
// sequence number column (a long). Errors name the key.
func DataSchema(sc *ibg.Schema, cfg config.WriteConfig) (*ibg.Schema, error) {
	seq := cfg.SequenceNumberColumn
	if seq == "" {
		seq = config.DefaultSequenceNumberColumn
	}
	checks := []struct {
		key, col string
		want     ibg.Type
	}{{config.KeySequenceNumberColumn, seq, ibg.PrimitiveTypes.Int64}}
	if cfg.ChangeTypeColumn != "" {
		checks = append(checks, struct {
			key, col string
			want     ibg.Type
		}{config.KeyChangeTypeColumn, cfg.ChangeTypeColumn, ibg.PrimitiveTypes.String})
	}
	var errs config.Errors
	for _, c := range checks {
		f, ok := sc.FindFieldByName(c.col)
		switch {
		case !ok:
			errs.Add(config.Errorf(c.key, "the rows have no column %q", c.col))
		case !f.Type.Equals(c.want):
			errs.Add(config.Errorf(c.key, "column %q is %s in the rows, want %s", c.col, f.Type, c.want))
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	var fields []ibg.NestedField
	for _, f := range sc.Fields() {
		if f.Name == seq || (cfg.ChangeTypeColumn != "" && f.Name == cfg.ChangeTypeColumn) {
			continue
		}
		fields = append(fields, f)
	}
	return ibg.NewSchema(sc.ID, fields...), nil
}

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
