#![no_main]
ntttcp_fuzz::target!(data_opening);
