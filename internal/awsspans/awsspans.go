// Package awsspans traces the AWS SDK calls Floe makes to external storage
// (S3) as OpenTelemetry child spans of the request that caused them, the
// way package bucket traces the embedded object store: "object.get",
// "object.put", "object.head", "object.list", "object.delete", and
// "aws.<service>.<operation>" for the rest. Like package spans it starts
// nothing when the context carries no recording span, and records no
// bucket, key, credential or error text: only the service, the operation
// and the outcome.
package awsspans

import (
	"context"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/otel/attribute"

	"github.com/floe-lake/floe/internal/spans"
)

// Attribute keys of the spans.
const (
	// AttrStorage is "s3" for external storage (the embedded store's
	// spans do not set it).
	AttrStorage = attribute.Key("floe.storage")
	// AttrOperation is the AWS API operation, e.g. "GetObject".
	AttrOperation = attribute.Key("rpc.method")
	// AttrService is the AWS service id, e.g. "S3".
	AttrService = attribute.Key("rpc.service")
)

// names maps S3 operations to the span names of the embedded store.
var names = map[string]string{
	"GetObject":     "object.get",
	"PutObject":     "object.put",
	"HeadObject":    "object.head",
	"ListObjectsV2": "object.list",
	"DeleteObject":  "object.delete",
	"DeleteObjects": "object.delete",
	"CopyObject":    "object.copy",
}

// APIOption adds the tracing middleware to a client's stack: append it
// to aws.Config.APIOptions before clients are made from the config.
func APIOption(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("floe.awsspans", trace), middleware.After)
}

func trace(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	if !spans.On(ctx) {
		return next.HandleInitialize(ctx, in)
	}
	svc, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	name, ok := names[op]
	if !ok || svc != "S3" {
		name = "aws." + svc + "." + op
	}
	ctx, span := spans.Start(ctx, name)
	span.SetAttributes(AttrStorage.String("s3"), AttrService.String(svc), AttrOperation.String(op))
	out, md, err := next.HandleInitialize(ctx, in)
	spans.End(span, err)
	return out, md, err
}
