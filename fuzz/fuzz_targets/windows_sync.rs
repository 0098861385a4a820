#![no_main]
ntttcp_fuzz::target!(windows_sync);
