// SPDX-License-Identifier: MIT

//go:build race

package gpubuf

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true
