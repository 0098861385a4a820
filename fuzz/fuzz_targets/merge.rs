#![no_main]
ntttcp_fuzz::target!(merge);
