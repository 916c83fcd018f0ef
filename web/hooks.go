package web

import (
	"fmt"
	"io/fs"
)

// Hooks for servers built around the book's handler (package web/classroom):
// they serve pages of their own beside the book's, with its assets and its
// Host rule.

// AssetBase is the address under which a handler built from static serves
// its assets, "/static/VERSION/", so that another page can link to them.
func AssetBase(static fs.FS) (string, error) {
	a, err := loadAssets(static)
	if err != nil {
		return "", err
	}
	return "/static/" + a.version + "/", nil
}

// HostCheck is the book's Host allowlist as a function (Config.AllowedHosts
// says what the list holds; empty means DefaultAllowedHosts).
func HostCheck(allowed []string) (func(host string) bool, error) {
	m, err := newHostMatcher(allowed)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	return m.allows, nil
}
