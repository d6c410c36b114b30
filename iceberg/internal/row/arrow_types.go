package row

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	ibg "github.com/apache/iceberg-go"
)

// fieldIDKey is the Arrow field metadata key iceberg-go writes field IDs under.
const fieldIDKey = "PARQUET:field_id"

// fieldID returns the Iceberg field ID in f's metadata, or 0.
func fieldID(f arrow.Field) int {
	if v, ok := f.Metadata.GetValue(fieldIDKey); ok {
		if id, err := strconv.Atoi(v); err == nil {
			return id
		}
	}
	return 0
}

// icebergTypeOf derives the Iceberg type of an Arrow field: timestamps with a time zone
// are timestamptz, the UUID extension is uuid, fixed-size binary is fixed, dictionaries
// have their value type, and large or view strings and binaries are string and binary.
// Nested field IDs come from the field-id metadata (0 when absent).
func icebergTypeOf(dt arrow.DataType) (ibg.Type, error) {
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return ibg.PrimitiveTypes.Bool, nil
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Uint8Type, *arrow.Uint16Type:
		return ibg.PrimitiveTypes.Int32, nil
	case *arrow.Int64Type, *arrow.Uint32Type:
		return ibg.PrimitiveTypes.Int64, nil
	case *arrow.Float16Type, *arrow.Float32Type:
		return ibg.PrimitiveTypes.Float32, nil
	case *arrow.Float64Type:
		return ibg.PrimitiveTypes.Float64, nil
	case *arrow.Decimal128Type:
		return ibg.DecimalTypeOf(int(dt.Precision), int(dt.Scale)), nil
	case *arrow.Date32Type:
		return ibg.PrimitiveTypes.Date, nil
	case *arrow.Time32Type, *arrow.Time64Type:
		return ibg.PrimitiveTypes.Time, nil
	case *arrow.TimestampType:
		switch {
		case dt.Unit == arrow.Nanosecond && dt.TimeZone != "":
			return ibg.PrimitiveTypes.TimestampTzNs, nil
		case dt.Unit == arrow.Nanosecond:
			return ibg.PrimitiveTypes.TimestampNs, nil
		case dt.TimeZone != "":
			return ibg.PrimitiveTypes.TimestampTz, nil
		}
		return ibg.PrimitiveTypes.Timestamp, nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return ibg.PrimitiveTypes.String, nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return ibg.PrimitiveTypes.Binary, nil
	case *extensions.UUIDType:
		return ibg.PrimitiveTypes.UUID, nil
	case *extensions.VariantType:
		return ibg.VariantType{}, nil
	case *arrow.FixedSizeBinaryType:
		return ibg.FixedTypeOf(dt.ByteWidth), nil
	case *arrow.NullType:
		return ibg.PrimitiveTypes.Unknown, nil
	case *arrow.DictionaryType:
		return icebergTypeOf(dt.ValueType)
	case *arrow.MapType:
		kt, err := icebergTypeOf(dt.KeyType())
		if err != nil {
			return nil, err
		}
		vt, err := icebergTypeOf(dt.ItemType())
		if err != nil {
			return nil, err
		}
		return &ibg.MapType{KeyID: fieldID(dt.KeyField()), KeyType: kt,
			ValueID: fieldID(dt.ItemField()), ValueType: vt, ValueRequired: !dt.ItemField().Nullable}, nil
	case arrow.ListLikeType:
		et, err := icebergTypeOf(dt.Elem())
		if err != nil {
			return nil, err
		}
		ef := dt.ElemField()
		return &ibg.ListType{ElementID: fieldID(ef), Element: et, ElementRequired: !ef.Nullable}, nil
	case *arrow.StructType:
		fs := make([]ibg.NestedField, dt.NumFields())
		for i, f := range dt.Fields() {
			ft, err := icebergTypeOf(f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			fs[i] = ibg.NestedField{ID: fieldID(f), Name: f.Name, Type: ft, Required: !f.Nullable}
		}
		return &ibg.StructType{FieldList: fs}, nil
	case arrow.ExtensionType:
		return icebergTypeOf(dt.StorageType())
	}
	return nil, fmt.Errorf("%w: arrow type %s", ErrUnsupportedType, dt)
}
