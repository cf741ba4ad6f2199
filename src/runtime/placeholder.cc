namespace acan::runtime {}
