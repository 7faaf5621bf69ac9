package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// fingerprintLen is the length of a [Fingerprint]: 8 lower-case hex digits (32 bits).
const fingerprintLen = 8

// Fingerprint returns the first 8 lower-case hex digits of HMAC-SHA256(key, value).
//
// It is the one keyed fingerprint of the project: the redaction token, the audit log and
// every message that needs to refer to a secret value use it, so that the same value
// always gives the same fingerprint under the same per-install key. It reveals nothing
// about the value to anyone who does not hold the key; to someone who does, a
// low-entropy value can be guessed offline, so the key must never reach the child.
func Fingerprint(key, value []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(value)
	var sum [sha256.Size]byte
	return hex.EncodeToString(mac.Sum(sum[:0])[:fingerprintLen/2])
}

// auditFingerprintLen is the length of an [AuditFingerprint]: 16 lower-case
// hex digits (64 bits).
const auditFingerprintLen = 16

// AuditFingerprint returns the first 16 lower-case hex digits of
// HMAC-SHA256(key, value): the audit log's fingerprint, long enough that two
// values of one install never share one in practice (a 32-bit [Fingerprint]
// collides after some 65,000 values). Its first 8 digits are the value's
// [Fingerprint], so a log entry can be matched with a [MASKED:xxxxxxxx]
// token by eye.
func AuditFingerprint(key, value []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(value)
	var sum [sha256.Size]byte
	return hex.EncodeToString(mac.Sum(sum[:0])[:auditFingerprintLen/2])
}

// Token returns the replacement text for value: "[MASKED:" + [Fingerprint](key, value) + "]".
func Token(key, value []byte) string {
	return tokenPrefix + Fingerprint(key, value) + tokenSuffix
}

const (
	tokenPrefix = "[MASKED:"
	tokenSuffix = "]"
)
