#![no_main]
ntttcp_fuzz::target!(sync_frames);
