// Package s3 serves s3:// paths to internal/files, as internal/files/gcs serves gs://:
// importing it registers Beam's S3 filesystem, the ranged reads and
// not-found errors of files.ReadRanges and the listings of files.ListAfter,
// so transforms and pipeline link no AWS client.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3" // s3:// (AWS_* environment)
)

func init() {
	files.RegisterStore("s3", files.Store{Ranges: ranges, ListFrom: listFrom, NotExist: notExist})
}

func client() (*s3.Client, error) {
	return files.Client("s3 store", func() (*s3.Client, error) {
		// As Beam's s3 filesystem builds its own.
		cfg, err := awsconfig.LoadDefaultConfig(context.Background())
		if err != nil {
			return nil, fmt.Errorf("s3 filesystem: %w", err)
		}
		return s3.NewFromConfig(cfg), nil
	})
}

func ranges(ctx context.Context, bucket, key string) (func(model.LineRef) (io.ReadCloser, error), error) {
	c, err := client()
	if err != nil {
		return nil, err
	}
	return func(r model.LineRef) (io.ReadCloser, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Range: aws.String(fmt.Sprintf("bytes=%d-%d", r.Offset, r.Offset+int64(r.Length)-1))})
		if err != nil {
			return nil, err
		}
		return out.Body, nil
	}, nil
}

func notExist(err error) bool {
	var (
		noKey    *s3types.NoSuchKey
		notFound *s3types.NotFound
		noBucket *s3types.NoSuchBucket
	)
	return errors.As(err, &noKey) || errors.As(err, &notFound) || errors.As(err, &noBucket) || s3Missing(err)
}

// s3Missing recognises a missing object or bucket by the 404 in the message:
// Beam's s3 OpenRead formats the SDK's error with %v, which drops its type.
func s3Missing(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "error getting object s3://") && strings.Contains(msg, "response error StatusCode: 404")
}

// listFrom lists with start-after (exclusive: start is never wanted, as a
// name or as the prefix itself); the delimiter folds what lies deeper into
// common prefixes, which are skipped.
func listFrom(ctx context.Context, bucket, prefix, start string, limit int) ([]string, error) {
	c, err := client()
	if err != nil {
		return nil, err
	}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/"), MaxKeys: aws.Int32(int32(limit))}
	if start != "" {
		in.StartAfter = aws.String(start)
	}
	var names []string
	for p := s3.NewListObjectsV2Paginator(c, in); p.HasMorePages() && len(names) < limit; {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			if name := strings.TrimPrefix(aws.ToString(o.Key), prefix); name != "" {
				names = append(names, name)
			}
		}
	}
	return names[:min(len(names), limit)], nil
}
