// Package caps is a fixture of the layering test.
package caps
