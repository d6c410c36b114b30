// Package s3 links Amazon S3 (and S3-compatible) FileIO for icebeam: tables
// and warehouses at s3://, s3a:// and s3n:// locations, through iceberg-go's
// gocloud FileIO and the AWS SDK. Import it for its side effect:
//
//	import _ "github.com/icebeam/icebeam/iceberg/storage/s3"
//
// FileIO properties come from catalog_properties (s3.region, s3.endpoint,
// s3.access-key-id, ... as iceberg-go reads them). A catalog whose warehouse
// or table is at s3:// fails at pipeline construction, naming this import,
// when no package linked it.
package s3

import (
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://, s3a://, s3n://
)
