package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/updatable-lrps/bbs/model"
)

// readBody reads a request body of at most model.MaxRequestBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, model.MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, model.Errorf(model.ErrRequestTooLarge, "request body is larger than %d bytes", model.MaxRequestBytes)
		}
		return nil, model.Errorf(model.ErrInvalidRequest, "could not read the request body: %v", err)
	}
	return body, nil
}

// decodeRequest parses a BBS-style request body into v. An empty body is an empty request;
// text that is not JSON is InvalidJSON; JSON of the wrong shape or types is InvalidRequest.
func decodeRequest(body []byte, v any) error {
	// JSON whitespace only (RFC 8259): bytes.TrimSpace would also strip \v, \f, U+0085 and U+00A0.
	body = bytes.Trim(body, " \t\r\n")
	if len(body) == 0 {
		return nil
	}
	if !json.Valid(body) {
		return model.Errorf(model.ErrInvalidJSON, "the request body is not valid JSON")
	}
	if body[0] != '{' {
		return model.Errorf(model.ErrInvalidRequest, "the request body must be a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return describeDecodeError(err)
	}
	return nil
}

func describeDecodeError(err error) error {
	// A field that decodes itself strictly (model.RolloutStrategy) says what is wrong.
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			field = "value"
		}
		return model.Errorf(model.ErrInvalidRequest, "%s: expected %s, got JSON %s", field, model.DescribeJSONType(typeErr.Type.String()), typeErr.Value)
	}
	return model.Errorf(model.ErrInvalidRequest, "the request body does not match the expected shape: %v", err)
}
