module github.com/vkjobs/vkjobs

go 1.26
