// SPDX-License-Identifier: MIT

//go:build !race

package gpubuf

const raceEnabled = false
