package contentblock_test

import (
	"encoding/base64"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/contentblock"
)

func TestImage(t *testing.T) {
	t.Parallel()
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	tests := []struct {
		name                    string
		src                     *contentblock.ImageSource
		want                    parley.ImageSource
		sniffed, field, message string
	}{
		{name: "base64", src: &contentblock.ImageSource{Type: "base64", MediaType: "image/png", Data: png},
			want: parley.ImageSource{Data: png, MediaType: "image/png"}},
		{name: "mislabelled", src: &contentblock.ImageSource{Type: "base64", MediaType: "image/jpeg", Data: png},
			want: parley.ImageSource{Data: png, MediaType: "image/png"}, sniffed: "image/png"},
		{name: "url", src: &contentblock.ImageSource{Type: "url", URL: "https://a.b/c.png"}, want: parley.ImageSource{URL: "https://a.b/c.png"}},
		{name: "no source", field: ".source", message: "an image needs a source"},
		{name: "bad base64", src: &contentblock.ImageSource{Type: "base64", Data: "!!"}, field: ".source.data", message: "not valid base64"},
		{name: "other type", src: &contentblock.ImageSource{Type: "file"}, field: ".source.type", message: `"file" is not base64 or url`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, sniffed, problem := contentblock.Image(tt.src, parley.RoleUser)
			if tt.message != "" {
				if problem == nil || problem.Field != tt.field || problem.Message != tt.message {
					t.Fatalf("got problem %+v, want %s: %s", problem, tt.field, tt.message)
				}
				return
			}
			if problem != nil {
				t.Fatalf("got problem %+v, want none", problem)
			}
			if m.Source != tt.want || m.Role != parley.RoleUser || sniffed != tt.sniffed {
				t.Errorf("got %+v (%s), sniffed %q; want %+v, sniffed %q", m.Source, m.Role, sniffed, tt.want, tt.sniffed)
			}
		})
	}
}

func TestToolResult(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	meta := parley.MessageMeta{Role: parley.RoleResult}
	tests := []struct {
		name    string
		isError *bool
		text    string
		status  parley.ToolResultStatus
		errMsg  string // "": no error
	}{
		{"success", nil, "ok", parley.ToolSuccess, ""},
		{"is_error false", &no, "ok", parley.ToolSuccess, ""},
		{"error", &yes, "  boom \n", parley.ToolError, "boom"},
		{"error without text", &yes, " ", parley.ToolError, "The tool reported an error."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := contentblock.ToolResult(meta, contentblock.Block{ToolUseID: "toolu_1", IsError: tt.isError}, tt.text)
			if res.ToolCallID != "toolu_1" || res.Role != parley.RoleResult || res.Status != tt.status || res.Body.Text() != tt.text {
				t.Errorf("got %+v, want call toolu_1, role result, status %s, text %q", res, tt.status, tt.text)
			}
			switch {
			case tt.errMsg == "" && res.Error != nil:
				t.Errorf("error: got %+v, want none", res.Error)
			case tt.errMsg != "" && (res.Error == nil || res.Error.Message != tt.errMsg || !res.Error.Recoverable):
				t.Errorf("error: got %+v, want %q, recoverable", res.Error, tt.errMsg)
			}
		})
	}
}
