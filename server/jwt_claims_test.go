package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestJWTClaimTypes: a JWT's time claims must be JSON numbers (RFC 7519, NumericDate),
// an iat in the future (beyond the 30 s leeway) is refused, and sub must be a string.
// Each refusal is 401 UNAUTHENTICATED with a message saying what is wrong.
func TestJWTClaimTypes(t *testing.T) {
	t.Parallel()
	srv := authServer(t)
	now := time.Now()
	hour := now.Add(time.Hour).Unix()
	sign := func(claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(jwtSecret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name    string
		claims  jwt.MapClaims
		want    int
		message string // part of the 401's message
	}{
		{"numeric claims", jwt.MapClaims{"sub": "alice", "exp": hour, "iat": now.Unix(), "nbf": now.Unix()}, 200, ""},
		{"fractional exp", jwt.MapClaims{"sub": "alice", "exp": float64(hour) + 0.5}, 200, ""},
		{"iat within the leeway", jwt.MapClaims{"sub": "alice", "exp": hour, "iat": now.Add(10 * time.Second).Unix()}, 200, ""},
		{"exp as a string", jwt.MapClaims{"sub": "alice", "exp": "99999999999"}, 401, "wrong type"},
		{"nbf as a string", jwt.MapClaims{"sub": "alice", "exp": hour, "nbf": "0"}, 401, "wrong type"},
		{"iat as a string", jwt.MapClaims{"sub": "alice", "exp": hour, "iat": "0"}, 401, "wrong type"},
		{"exp as a boolean", jwt.MapClaims{"sub": "alice", "exp": true}, 401, "wrong type"},
		{"sub as a number", jwt.MapClaims{"sub": 42, "exp": hour}, 401, "wrong type"},
		{"iat in the future", jwt.MapClaims{"sub": "alice", "exp": hour, "iat": now.Add(10 * time.Minute).Unix()}, 401, "iat is in the future"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, resp := post(t, srv.URL, "Bearer "+sign(tt.claims), `{ conversations { totalCount } }`)
			if status != tt.want {
				t.Fatalf("status %d, want %d (%+v)", status, tt.want, resp.Errors)
			}
			if tt.want != 401 {
				return
			}
			if len(resp.Errors) != 1 || resp.Errors[0].Code() != "UNAUTHENTICATED" || !strings.Contains(resp.Errors[0].Message, tt.message) {
				t.Errorf("got errors %+v, want one UNAUTHENTICATED saying %q", resp.Errors, tt.message)
			}
		})
	}
}
