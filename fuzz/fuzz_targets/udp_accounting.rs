#![no_main]
ntttcp_fuzz::target!(udp_accounting);
