use std::time::Duration;
