module example.com/gpubuf-matrix

go 1.19

require gpubuf.org/gpubuf v0.0.0

// Where the binding is: this tree's bindings/go. A copy of this example
// points it at a checkout of gpubuf instead.
replace gpubuf.org/gpubuf => ../../bindings/go
