#![no_main]
ntttcp_fuzz::target!(procfs);
