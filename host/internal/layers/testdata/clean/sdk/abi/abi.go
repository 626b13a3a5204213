// Package abi is a fixture of the layering test.
package abi
