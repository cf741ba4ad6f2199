namespace acan::nn {}
