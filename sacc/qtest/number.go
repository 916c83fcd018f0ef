package qtest

import (
	"errors"
	"fmt"
	"math"
)

// Errors that ParseNumber wraps, for errors.Is.
var (
	ErrSyntax = errors.New("invalid number")
	ErrRange  = errors.New("number does not fit in 64 bits")
)

// ParseNumber parses like C strtoul(s, NULL, 0) but strictly: decimal, 0x/0X hex,
// leading-0 octal; a sign, overflow of 64 bits, empty string or any trailing junk is an
// error.
//
// Strictness is the point: strtoul would read "0x1g" as 1, "-1" as 0xffffffffffffffff
// and "99999999999999999999" as ULONG_MAX, so a typo would silently poke a different
// address. Unlike strconv.ParseUint with base 0, it accepts no '_' separators and no
// 0b/0o prefixes, which C does not know either; unlike strtoul it skips no leading
// white space (the protocol's tokens have none).
func ParseNumber(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrSyntax)
	}
	base, digits, kind := uint64(10), s, "decimal"
	if len(s) > 1 && s[0] == '0' {
		if s[1] == 'x' || s[1] == 'X' {
			base, digits, kind = 16, s[2:], "hex"
			if digits == "" {
				return 0, fmt.Errorf("%w: no hex digits after %s", ErrSyntax, s[:2])
			}
		} else {
			base, digits, kind = 8, s[1:], "octal"
		}
	}
	var n uint64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		d := uint64(math.MaxUint64)
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = uint64(c-'A') + 10
		}
		if d >= base {
			what := fmt.Sprintf("%q is not a %s digit", c, kind)
			switch {
			case i == 0 && base == 10 && (c == '+' || c == '-'):
				what = "a sign is not allowed"
			case kind == "octal" && d < 10:
				what = fmt.Sprintf("%q is not an octal digit (a leading 0 means octal)", c)
			}
			return 0, fmt.Errorf("%w: %s", ErrSyntax, what)
		}
		if n > (math.MaxUint64-d)/base {
			return 0, ErrRange
		}
		n = n*base + d
	}
	return n, nil
}
