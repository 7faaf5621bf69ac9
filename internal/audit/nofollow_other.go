//go:build !unix

package audit

// oNoFollow is 0 where there is no O_NOFOLLOW (Windows).
const oNoFollow = 0
