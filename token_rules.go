package parley

import (
	"strings"
	"time"
)

// CleanTokenName checks the label of an API token: cleaned as any text, trimmed, at most
// 200 bytes. Returns EINVALID.
func CleanTokenName(name string) (string, error) {
	name, err := CleanText("name", strings.TrimSpace(name))
	if err != nil {
		return "", err
	}
	if len(name) > maxNameBytes {
		return "", Errorf(EINVALID, "name: %d bytes, at most %d allowed", len(name), maxNameBytes)
	}
	return name, nil
}

// CheckTokenExpiry refuses a token that would be expired when it is created at now
// (nil: it never expires). Returns EINVALID.
func CheckTokenExpiry(expiresAt *time.Time, now time.Time) error {
	if expiresAt != nil && !expiresAt.After(now) {
		return Errorf(EINVALID, "expires: %s is in the past", expiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// CheckLimit checks the number of items a list query asks for and applies the default:
// 0 means DefaultPageSize; otherwise 1 to MaxPageSize. Returns EINVALID naming field.
func CheckLimit(field string, n int) (int, error) {
	if n == 0 {
		return DefaultPageSize, nil
	}
	if n < 0 || n > MaxPageSize {
		return 0, Errorf(EINVALID, "%s: %d is out of range 1..%d", field, n, MaxPageSize)
	}
	return n, nil
}
