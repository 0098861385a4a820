#![no_main]
ntttcp_fuzz::target!(rr_framing);
