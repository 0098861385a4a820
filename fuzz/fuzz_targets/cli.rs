#![no_main]
ntttcp_fuzz::target!(cli);
