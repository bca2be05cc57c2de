package transport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// TestJSONDecodeIsEncodingJSONs holds jsonDecode to encoding/json's decoder as gqlgen
// uses it (numbers as json.Number): the same parameters from every body, well-formed or
// not, and for a body it refuses the same error, which the response quotes.
func TestJSONDecodeIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"query":"query History($c: ID!) {\n\tconversation(id: $c) { id }\n}","variables":{"c":"conv_1"}}`,
		`{"query":"a","operationName":"A","variables":{"a":{"b":[true,false,null,"x",1.5,-0,1E2,12345678901234567890123]}},"extensions":{"persistedQuery":{"version":1}}}`,
		` {"query" : "a" , "variables" : { } } `,
		`{"query":"\u00e9\n\t\ud83d\ude00","operationName":null,"variables":null}`,
		"{\"query\":\"a\xff\xfe\"}", "{\"variables\":{\"k\xff\":1}}", "{\"query\":\"\xc3\"}", `{"query":"\ud800"}`, `{"query":"\udc00x"}`,
		`{"query":"a","query":"b"}`, `{"Query":"a"}`, `{"query":"a"} trailing`, `{"query":"a"}{"query":"b"}`,
		// Refused.
		`{"query":"a"`, `{"query":1}`, `{"query":true}`, `{"variables":"x"}`, `[]`, "{\"query\":\"a\x01\"}", `{"query":"\x"}`,
		`{"variables":{"n":01}}`, `{"variables":{"n":1.}}`, `{"variables":{"n":-}}`, `{"variables":{"n":.5}}`, `{"variables":{"n":NaN}}`,
		`{"variables":{"n":1e400}}`, "\xef\xbb\xbf{}", `{"query":"a",}`, `{'query':'a'}`, `{"variables":[1,]}`, ``,
	}
	for _, body := range bodies {
		var want graphql.RawParams
		dec := json.NewDecoder(bytes.NewReader([]byte(body)))
		dec.UseNumber()
		wantErr := dec.Decode(&want)
		var got graphql.RawParams
		err := jsonDecode([]byte(body), &got)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%q: got error %v, want %v", body, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v, want %+v", body, got, want)
		}
	}
}
