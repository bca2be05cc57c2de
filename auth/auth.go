// Package auth authenticates requests: it turns a bearer credential, an API token
// (parley.TokenPrefix...) or a JWT, into the parley.Principal it stands for. API tokens
// are checked against the store (parley.TokenService); JWTs are verified with
// golang-jwt against an HS256 secret and/or the public keys of a JWKS file (read with
// keyfunc, once, at start: no network), their sub claim naming the owner.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/parley-dev/parley"
)

// Config says which credentials a server accepts.
type Config struct {
	// Tokens accepts API tokens from the store (parley token create).
	Tokens parley.TokenService
	// JWTSecret verifies HS256 JWTs; empty accepts none.
	JWTSecret []byte
	// JWKSFile is a JSON Web Key Set whose public keys verify RS256, RS384, RS512,
	// ES256, ES384, ES512, PS256... and EdDSA JWTs; empty accepts none.
	JWKSFile string
	// Issuer and Audience, when set, must match the JWT's iss and one of its aud.
	Issuer   string
	Audience string
	// Leeway is the clock skew allowed on exp, nbf and iat (default 30s).
	Leeway time.Duration
	// Now is the clock (default time.Now): tests move it.
	Now func() time.Time
}

// InvalidTokens implements parley.CredentialChecker: JWTs cannot be revoked (their
// expiry ends what they opened), API tokens can.
func (a *Authenticator) InvalidTokens(ctx context.Context, ids []string) ([]string, error) {
	if a.cfg.Tokens == nil {
		return ids, nil
	}
	return a.cfg.Tokens.InvalidTokens(ctx, ids)
}

// Authenticator implements parley.Authenticator.
type Authenticator struct {
	cfg    Config
	parser *jwt.Parser
	keys   jwt.Keyfunc // nil when JWTs are not accepted
}

var _ parley.Authenticator = (*Authenticator)(nil)

// New returns an Authenticator for cfg, reading the JWKS file when one is named.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &Authenticator{cfg: cfg}
	var jwks keyfunc.Keyfunc
	if cfg.JWKSFile != "" {
		b, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("auth.jwks_file: %w", err)
		}
		if jwks, err = keyfunc.NewJWKSetJSON(json.RawMessage(b)); err != nil {
			return nil, fmt.Errorf("auth.jwks_file %s: not a JSON Web Key Set: %w", cfg.JWKSFile, err)
		}
	}
	var methods []string
	if len(cfg.JWTSecret) > 0 {
		methods = append(methods, jwt.SigningMethodHS256.Alg())
	}
	if jwks != nil {
		// Asymmetric algorithms only: a public key must never be taken for an HMAC secret.
		methods = append(methods, "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
	}
	if len(methods) == 0 {
		return a, nil
	}
	// WithIssuedAt refuses a token issued in the future (beyond the leeway);
	// WithJSONNumber keeps exp, nbf and iat numbers as json.Number, so that MapClaims
	// (see Authenticate) takes them exactly.
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(methods), jwt.WithExpirationRequired(), jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now), jwt.WithIssuedAt(), jwt.WithJSONNumber(),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	a.parser = jwt.NewParser(opts...)
	a.keys = func(t *jwt.Token) (any, error) {
		if t.Method.Alg() == jwt.SigningMethodHS256.Alg() {
			if len(cfg.JWTSecret) == 0 {
				return nil, errors.New("HS256 is not accepted")
			}
			return cfg.JWTSecret, nil
		}
		if jwks == nil {
			return nil, errors.New("no JWKS is configured")
		}
		return jwks.Keyfunc(t)
	}
	return a, nil
}

// Configured reports whether the Authenticator accepts any credential at all.
func (a *Authenticator) Configured() bool { return a.cfg.Tokens != nil || a.keys != nil }

// Authenticate implements parley.Authenticator.
func (a *Authenticator) Authenticate(ctx context.Context, credential string) (*parley.Principal, error) {
	credential = strings.TrimSpace(credential)
	if strings.HasPrefix(credential, parley.TokenPrefix) {
		if a.cfg.Tokens == nil {
			return nil, parley.Errorf(parley.EUNAUTHORIZED, "API tokens are not accepted by this server.")
		}
		return a.cfg.Tokens.AuthenticateToken(ctx, credential)
	}
	if a.keys == nil {
		return nil, parley.Errorf(parley.EUNAUTHORIZED, "The credential is not an API token (%s...), and this server accepts no JWTs.", parley.TokenPrefix)
	}
	// MapClaims, not RegisteredClaims: RegisteredClaims's NumericDate also takes a
	// string of digits ("exp": "99999999999"), where RFC 7519 (section 2, NumericDate)
	// wants a JSON number; MapClaims refuses any other type, for exp, nbf and iat alike,
	// and a sub that is not a string.
	claims := jwt.MapClaims{}
	if _, err := a.parser.ParseWithClaims(credential, claims, a.keys); err != nil {
		return nil, parley.Errorf(parley.EUNAUTHORIZED, "The JWT is not valid: %s.", jwtProblem(err))
	}
	sub, err := claims.GetSubject()
	if err != nil {
		return nil, parley.Errorf(parley.EUNAUTHORIZED, "The JWT is not valid: %s.", jwtProblem(err))
	}
	owner, err := parley.CleanOwner(sub)
	if err != nil {
		return nil, parley.Errorf(parley.EUNAUTHORIZED, "The JWT's sub claim does not name an owner: %s.", parley.ErrorMessage(err))
	}
	p := &parley.Principal{Owner: owner, Method: "jwt"}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		p.ExpiresAt = exp.Time
	}
	return p, nil
}

// jwtProblem says what is wrong with a token in words that reveal nothing secret.
func jwtProblem(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "it has expired"
	case errors.Is(err, jwt.ErrInvalidType):
		return "its exp, nbf, iat or sub claim has the wrong type (the times must be JSON numbers)"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "its iat is in the future"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "it is not valid yet"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "it has no exp claim"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "its issuer is not the one configured"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "its audience is not the one configured"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "its signature does not verify"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "it is malformed"
	}
	return "it cannot be verified"
}
