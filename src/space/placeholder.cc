namespace acan {}
